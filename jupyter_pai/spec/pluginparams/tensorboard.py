"""``tensorboard``'s parameters: ``logdir`` (a path, or ``{name: path}``) and ``port``. An
entry without parameters is valid: OpenPAI skips it."""

from __future__ import annotations

from typing import Any

from ...errors import FieldError
from .uses import PluginUse


def port_number(value: Any) -> int | None:
    """``port`` as a TCP port number (1 to 65535); None when it is not one."""
    if isinstance(value, bool):
        return None
    try:
        port = int(value)
    except (TypeError, ValueError):
        return None
    return port if 0 < port < 65536 else None


def logdirs(value: Any) -> dict[str, str] | None:
    """``logdir`` as {name: path} (one path is named ``logdir``); None when it is neither."""
    if isinstance(value, str) and value:
        return {"logdir": value}
    if isinstance(value, dict) and value and all(isinstance(v, str) for v in value.values()):
        return {str(k): v for k, v in value.items()}
    return None


def errors(use: PluginUse) -> list[FieldError]:
    """Parameters OpenPAI's tensorboard plugin would fail on."""
    p = use.parameters
    found: list[FieldError] = []
    if not p:
        return found  # OpenPAI skips a tensorboard entry without parameters
    if logdirs(p.get("logdir")) is None:
        found.append(
            FieldError(
                use.field_path("logdir"),
                "runtime plugin tensorboard: needs logdir, {name: path} of the logs to show",
            )
        )
    if p.get("port") is not None and port_number(p["port"]) is None:
        found.append(
            FieldError(use.field_path("port"), "runtime plugin tensorboard: must be a port number")
        )
    return found
