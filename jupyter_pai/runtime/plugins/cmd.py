"""``cmd``: shell lines before the user's commands and after they succeed, written either as
``preCommands``/``postCommands`` or as ``callbacks`` (a prerequisite's form: ``taskStarts``
→ before, ``taskSucceeds`` → after; other events are ignored, as OpenPAI does)."""

from __future__ import annotations

from typing import Any

from ...errors import FieldError
from ...spec.protocol import JobProtocol
from ..uses import PluginUse
from .base import Plugin, Sections, command_lines

EVENTS = {"taskStarts": "pre", "taskSucceeds": "post"}


def _callbacks(value: Any) -> list[tuple[str, list[str]]] | None:
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


class Cmd(Plugin):
    name = "cmd"

    def errors(self, use: PluginUse) -> list[FieldError]:
        p = use.parameters
        errors: list[FieldError] = []
        if p.get("callbacks"):
            for key in ("preCommands", "postCommands"):
                if key in p:
                    errors.append(
                        FieldError(
                            use.field_path(key),
                            f"runtime plugin cmd: give either callbacks or {key}, not both "
                            "(OpenPAI's cmd plugin fails on both)",
                        )
                    )
            if _callbacks(p["callbacks"]) is None:
                errors.append(
                    FieldError(
                        use.field_path("callbacks"),
                        "runtime plugin cmd: must be a list of {event, commands}",
                    )
                )
        for key in ("preCommands", "postCommands"):
            if key in p and command_lines(p[key]) is None:
                errors.append(
                    FieldError(
                        use.field_path(key), "runtime plugin cmd: must be a list of command lines"
                    )
                )
        return errors

    def sections(self, use: PluginUse, job: JobProtocol, backend: str) -> Sections:
        p = use.parameters
        pre: list[str] = []
        post: list[str] = []
        if p.get("callbacks"):
            for event, lines in _callbacks(p["callbacks"]) or []:
                if EVENTS.get(event) == "pre":
                    pre += lines
                elif EVENTS.get(event) == "post":
                    post += lines
            return Sections(pre, post)
        return Sections(
            command_lines(p.get("preCommands", [])) or [],
            command_lines(p.get("postCommands", [])) or [],
        )
