"""``ssh``'s parameters: ``jobssh``, ``sshbarrier`` and ``sshbarrierTimeout`` (minutes),
``userssh`` (``{type, value}``)."""

from __future__ import annotations

import re
from typing import Any

from ...errors import FieldError
from .uses import PluginUse


def minutes(value: Any) -> str | None:
    """``sshbarrierTimeout`` as the whole number of minutes bash's arithmetic needs."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int) and value >= 0:
        return str(value)
    if isinstance(value, float) and value.is_integer() and value >= 0:
        return str(int(value))
    # ASCII digits only: the number goes into bash's arithmetic.
    if isinstance(value, str) and re.fullmatch(r"[0-9]+", value.strip()):
        return value.strip()
    return None


def errors(use: PluginUse) -> list[FieldError]:
    """Parameters OpenPAI's ssh plugin would fail on."""
    p = use.parameters
    found: list[FieldError] = []
    if "sshbarrierTimeout" in p and minutes(p["sshbarrierTimeout"]) is None:
        found.append(
            FieldError(
                use.field_path("sshbarrierTimeout"),
                "runtime plugin ssh: must be a whole number of minutes",
            )
        )
    if "userssh" in p and not isinstance(p["userssh"], dict):
        found.append(
            FieldError(use.field_path("userssh"), "runtime plugin ssh: must be {type, value}")
        )
    return found
