"""OpenPAI's ``<% … %>`` markers, rendered as OpenPAI renders them.

OpenPAI's rest-server renders a task's commands with mustache using ``<%`` / ``%>`` as tags:
a tag's name is looked up in ``{$parameters, $script, $data, $output}`` (the last three being
the prerequisites the task role names), dotted names walk into mappings, ``[N]`` indexes a
list (``<% $data.uri[0] %>``), and a name that resolves to nothing is written back as
``<% name %>`` (``[N]`` as ``.N``). Its runtime renders ``$secrets`` the same way when the
task starts, and renders plugin parameters (a prerequisite's ``callbacks`` among them)
against the task role that runs them. Values are written as JavaScript writes them: a list
as its items joined by commas, ``true``/``false``, ``1`` for ``1.0``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any

#: Any mustache tag with OpenPAI's delimiters. A ``<%`` never closed matches up to the end
#: (``unclosed`` set) and is text, not a tag: failing there instead would rescan the rest of
#: the text from every later ``<%``, quadratic in the text's length.
TAG = re.compile(r"<%(?P<body>.*?)(?:%>|(?P<unclosed>\Z))", re.DOTALL)
#: A tag whose name starts with ``$scope``; ``key`` is the rest after the first dot. Keys are
#: identifier-like (``a.b``, ``my-token``, ``uri[0]``): a ``<% $secrets.KEY %>`` left in a
#: task's script sits inside double quotes, so a key must hold nothing bash would expand.
MARKER = re.compile(
    r"<%\s*\$(?P<scope>[A-Za-z_][A-Za-z0-9_]*)"
    r"(?:\.(?P<key>[A-Za-z0-9_][A-Za-z0-9_-]*(?:\.[A-Za-z0-9_][A-Za-z0-9_-]*|\[[0-9]+\])*))?"
    r"\s*%>"
)
SCOPES = ("parameters", "secrets", "script", "data", "output")
#: Scopes that name a prerequisite of the task role (its ``script`` / ``data`` / ``output``).
PREREQUISITE_SCOPES = ("script", "data", "output")
_INDEX = re.compile(r"\[(\d+)\]")


def kept_secret(m: re.Match[str], secrets: Collection[str]) -> bool:
    """Whether the :data:`MARKER` match ``m`` is ``<% $secrets.KEY %>`` with KEY in
    ``secrets``: a secret the backend fills in, so the marker stays as written."""
    return m["scope"] == "secrets" and m["key"] is not None and m["key"] in secrets


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()


@dataclass(frozen=True)
class Reference:
    """One tag: ``name`` as OpenPAI normalises it (``$data.uri.0`` for ``$data.uri[0]``)."""

    name: str
    text: str

    @property
    def scope(self) -> str | None:
        if not self.name.startswith("$"):
            return None
        return self.name[1:].split(".", 1)[0]

    @property
    def key(self) -> str:
        """The dotted path after the scope ('' for the scope itself)."""
        parts = self.name.split(".", 1)
        return parts[1] if len(parts) > 1 else ""

    @property
    def left_as_is(self) -> str:
        """What OpenPAI writes for a tag that resolves to nothing."""
        return f"<% {self.name} %>"


def normalise(name: str) -> str:
    return _INDEX.sub(r".\1", name.strip())


def references(text: str) -> list[Reference]:
    return [
        Reference(normalise(m["body"]), m.group(0))
        for m in TAG.finditer(text)
        if m["unclosed"] is None
    ]


def lookup(values: Any, key: str) -> Any:
    """Dotted lookup (``a.b``, ``uri[0]`` or ``uri.0``) into mappings and lists; a key
    that exists as written wins (parameters may have dots in their names). KeyError when
    absent."""
    if isinstance(values, Mapping) and key in values:
        return values[key]
    current: Any = values
    for part in normalise(key).split("."):
        if isinstance(current, Mapping) and part in current:
            current = current[part]
        elif isinstance(current, list) and part.isdigit() and int(part) < len(current):
            current = current[int(part)]
        else:
            raise KeyError(key)
    return current


def resolve(context: Mapping[str, Any], ref: Reference) -> Any:
    """The value a tag names in ``context`` (``{"$parameters": …, "$data": …}``), or
    :data:`MISSING`. ``None`` counts as missing, as in mustache; so does a mapping (OpenPAI
    would write ``[object Object]``)."""
    scope = ref.scope
    if scope is None or f"${scope}" not in context:
        return MISSING
    root = context[f"${scope}"]
    if root is None:
        return MISSING
    try:
        value = lookup(root, ref.key) if ref.key else root
    except KeyError:
        return MISSING
    return MISSING if value is None or isinstance(value, Mapping) else value


def render(text: str, value_of: Callable[[Reference], Any]) -> str:
    """Every tag replaced by its value as text; a tag whose value is :data:`MISSING` is
    written back as OpenPAI leaves it."""

    def one(m: re.Match[str]) -> str:
        if m["unclosed"] is not None:
            return m.group(0)
        ref = Reference(normalise(m["body"]), m.group(0))
        value = value_of(ref)
        return ref.left_as_is if value is MISSING else as_text(value)

    return TAG.sub(one, text)


def as_text(value: Any) -> str:
    """A value as JavaScript's string conversion writes it (mappings as JSON, not
    ``[object Object]``)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, list):
        return ",".join(as_text(v) for v in value)
    if isinstance(value, dict):
        return json.dumps(value, separators=(",", ":"), sort_keys=True)
    return str(value)
