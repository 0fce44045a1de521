"""OpenPAI's ``<% $parameters.x %>`` / ``<% $secrets.x %>`` markers in commands."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

MARKER = re.compile(r"<%\s*\$(?P<scope>[A-Za-z]+)\.(?P<key>[A-Za-z0-9_.\-]+)\s*%>")
#: Anything that opens like a marker; those :data:`MARKER` does not match are malformed.
OPENING = re.compile(r"<%\s*\$[^%]*(?:%>)?")
SCOPES = ("parameters", "secrets", "script", "data", "output")
#: What ``<% $data.KEY %>`` (and script / output) may read from the prerequisite.
PREREQUISITE_KEYS = ("uri", "name")


@dataclass(frozen=True)
class Reference:
    scope: str
    key: str


def references(text: str) -> list[Reference]:
    return [Reference(m["scope"], m["key"]) for m in MARKER.finditer(text)]


def malformed(text: str) -> list[str]:
    """Marker-like pieces of ``text`` that are not valid markers (e.g. ``<% $parameters %>``)."""
    stripped = MARKER.sub("", text)
    return [m.group(0) for m in OPENING.finditer(stripped)]


def lookup(values: Mapping[str, Any], key: str) -> Any:
    """Dotted lookup (``a.b``) into nested mappings; raises KeyError when absent."""
    if key in values:
        return values[key]
    current: Any = values
    for part in key.split("."):
        if not isinstance(current, Mapping) or part not in current:
            raise KeyError(key)
        current = current[part]
    return current


def render(text: str, resolve: Callable[[Reference], str]) -> str:
    return MARKER.sub(lambda m: resolve(Reference(m["scope"], m["key"])), text)


def as_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return ""
    if isinstance(value, (dict, list)):
        return json.dumps(value, separators=(",", ":"), sort_keys=True)
    return str(value)
