"""``cmd``'s parameters: shell lines as ``preCommands``/``postCommands``, or ``callbacks``
(a prerequisite's form: a list of ``{event, commands}``), never both."""

from __future__ import annotations

from typing import Any

from ...errors import FieldError
from .uses import PluginUse


def command_lines(value: Any) -> list[str] | None:
    """A list of shell lines (a single text is one line); None when it is neither."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value)
    return None


def callbacks(value: Any) -> list[tuple[str, list[str]]] | None:
    """``callbacks`` as (event, lines) pairs; None when it is not a list of
    ``{event, commands}``."""
    if not isinstance(value, list):
        return None
    found: list[tuple[str, list[str]]] = []
    for item in value:
        if not isinstance(item, dict):
            return None
        lines = command_lines(item.get("commands", []))
        if lines is None:
            return None
        found.append((str(item.get("event", "")), lines))
    return found


def errors(use: PluginUse) -> list[FieldError]:
    """Parameters OpenPAI's cmd plugin would fail on."""
    p = use.parameters
    found: list[FieldError] = []
    if p.get("callbacks"):
        for key in ("preCommands", "postCommands"):
            if key in p:
                found.append(
                    FieldError(
                        use.field_path(key),
                        f"runtime plugin cmd: give either callbacks or {key}, not both "
                        "(OpenPAI's cmd plugin fails on both)",
                    )
                )
        if callbacks(p["callbacks"]) is None:
            found.append(
                FieldError(
                    use.field_path("callbacks"),
                    "runtime plugin cmd: must be a list of {event, commands}",
                )
            )
    for key in ("preCommands", "postCommands"):
        if key in p and command_lines(p[key]) is None:
            found.append(
                FieldError(
                    use.field_path(key), "runtime plugin cmd: must be a list of command lines"
                )
            )
    return found
