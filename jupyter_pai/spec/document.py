"""YAML / JSON text (or a mapping) → a plain dict, within bounds that every later step can
afford: a request of a few hundred bytes must not make the server walk millions of values.

YAML aliases repeat a value without writing it out again, so a tiny document can stand for
an exponential one ("billion laughs"). Values are counted as if every alias were expanded,
while the document is composed, and the document is refused as soon as a bound is passed,
as libyaml-based parsers and Go's yaml.v3 bound alias expansion. Each node of the composed
graph is then visited once, however many aliases name it.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, cast

import yaml
from yaml._yaml import CParser
from yaml.composer import Composer
from yaml.constructor import ConstructorError, SafeConstructor
from yaml.events import AliasEvent, ScalarEvent
from yaml.resolver import Resolver

from ..errors import FieldError, SpecError

#: Values (scalars, lists and mappings) a document may hold, aliases expanded. A job of a
#: thousand task roles holds far fewer; every step after parsing is linear in this.
MAX_VALUES = 20_000
#: Characters of text (keys and scalars) a document may hold, aliases expanded: no more
#: than the largest request body can write out.
MAX_CHARACTERS = 1024 * 1024
#: Alias references a document may use (``*name``, merges ``<<: *name`` included).
MAX_ALIASES = 1_000
#: How deep lists and mappings may nest; the protocol itself needs fewer than ten levels.
MAX_DEPTH = 100


def load_document(source: str | bytes | Mapping[str, Any]) -> dict[str, Any]:
    """YAML (a superset of JSON) or an already-parsed mapping → a plain dict.

    A key written twice in one mapping is an error (YAML would silently keep the last)."""
    if isinstance(source, Mapping):
        check_bounds(source)  # before deepcopy, which recurses as deep as the value nests
        return copy.deepcopy(dict(source))
    text = source.decode("utf-8", errors="replace") if isinstance(source, bytes) else source
    if not text.strip():
        raise SpecError([FieldError("", "the job specification is empty")])
    doc = _load_text(text)
    if doc is None:
        raise SpecError([FieldError("", "the job specification is empty")])
    if not isinstance(doc, dict):
        what = describe(doc)
        raise SpecError(
            [FieldError("", f"the job specification must be a mapping of fields, not {what}")]
        )
    return doc


def parse_json(text: str | bytes) -> Any:
    """A JSON request body, held to the same bounds as a job document."""
    try:
        value = json.loads(text)
    except RecursionError:
        raise _refused(f"the document nests deeper than {MAX_DEPTH} levels") from None
    except ValueError as exc:  # JSONDecodeError, or a number past Python's digit limit
        raise SpecError([FieldError("", f"not valid JSON: {_short(exc)}")]) from None
    check_bounds(value)
    return value


def check_bounds(value: Any) -> None:
    """SpecError when ``value`` nests deeper than :data:`MAX_DEPTH` or holds more values or
    text than :data:`MAX_VALUES` / :data:`MAX_CHARACTERS`, a value held in several places
    counting in each."""
    sizes: dict[int, _Size] = {}
    containers = 0

    def size(item: Any, depth: int) -> _Size:
        nonlocal containers
        if not isinstance(item, (Mapping, list, tuple)):
            return _Size(1, len(item) if isinstance(item, str) else 0)
        if depth > MAX_DEPTH:
            raise _refused(f"the document nests deeper than {MAX_DEPTH} levels")
        known = sizes.get(id(item))
        if known is not None:
            if known.values < 0:
                raise _refused("a value contains itself")
            return known
        containers += 1
        if containers > MAX_VALUES:
            raise _refused(f"the document holds more than {MAX_VALUES} values")
        sizes[id(item)] = _Size(-1, 0)
        children = [*item.keys(), *item.values()] if isinstance(item, Mapping) else item
        total = _Size.of(size(child, depth + 1) for child in children)
        total.check(expanded="")
        sizes[id(item)] = total
        return total

    size(value, 0).check(expanded="")


@dataclass
class _Size:
    """What a value stands for once aliases are expanded: values, and characters of text."""

    values: int
    characters: int

    @staticmethod
    def of(children: Iterable[_Size]) -> _Size:
        total = _Size(1, 0)
        for child in children:
            total.add(child)
        return total

    def add(self, other: _Size) -> None:
        self.values += other.values
        self.characters += other.characters

    def check(self, line: int | None = None, expanded: str = ", aliases expanded") -> None:
        if self.values > MAX_VALUES:
            raise _refused(f"the document holds more than {MAX_VALUES} values{expanded}", line)
        if self.characters > MAX_CHARACTERS:
            raise _refused(
                f"the document holds more than {MAX_CHARACTERS} characters of text{expanded}",
                line,
            )


def _load_text(text: str) -> Any:
    if text.lstrip().startswith(("{", "[")):
        try:
            value = json.loads(text)
        except (ValueError, RecursionError):
            pass  # YAML flow style also starts with { or [; let YAML judge it (and say where).
        else:
            check_bounds(value)
            return value
    loader = _BoundedLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        duplicate = _duplicate_key(node)
        if duplicate is not None:
            raise SpecError([duplicate])
        return loader.construct_document(node)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise SpecError([FieldError("", f"not valid YAML or JSON{where}: {problem}")]) from None
    finally:
        loader.dispose()


class _BoundedLoader(Composer, CParser, SafeConstructor, Resolver):
    """PyYAML's safe loader on libyaml's parser, with a composer that counts.

    libyaml scans and parses; composing stays in Python so each node and alias is counted
    as it arrives and the document is refused at once, before anything expands it."""

    def __init__(self, text: str) -> None:
        CParser.__init__(self, text)
        Composer.__init__(self)
        SafeConstructor.__init__(self)
        Resolver.__init__(self)
        #: Each finished node → what it stands for, aliases expanded.
        self._sizes: dict[yaml.Node, _Size] = {}
        self._total = _Size(0, 0)
        self._aliases = 0
        self._depth = 0

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node:
        event: Any = self.peek_event()
        line = event.start_mark.line + 1
        if isinstance(event, AliasEvent):
            self._aliases += 1
            if self._aliases > MAX_ALIASES:
                raise _refused(f"the document uses more than {MAX_ALIASES} aliases", line)
            node = cast(yaml.Node, super().compose_node(parent, index))
            size = self._sizes.get(node)
            if size is None:  # its anchor's node is still being composed
                raise _refused("an alias refers to the value that contains it", line)
            self._total.add(size)
            self._total.check(line)
            return node
        self._total.add(_Size(1, len(event.value) if isinstance(event, ScalarEvent) else 0))
        self._total.check(line)
        self._depth += 1
        if self._depth > MAX_DEPTH:
            raise _refused(f"the document nests deeper than {MAX_DEPTH} levels", line)
        node = cast(yaml.Node, super().compose_node(parent, index))
        self._depth -= 1
        if isinstance(node, yaml.ScalarNode):
            self._sizes[node] = _Size(1, len(node.value))
        else:
            self._sizes[node] = _Size.of(self._sizes[child] for child in _children(node))
        return node

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        try:
            return super().construct_object(node, deep)
        except ValueError as exc:  # a date that does not exist, a number past the digit limit
            raise ConstructorError(
                None, None, f"cannot read this value: {_short(exc)}", node.start_mark
            ) from None


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def _duplicate_key(root: yaml.Node) -> FieldError | None:
    """The first key written twice in one mapping. Each node is visited once: a node that
    aliases repeat is reported at the first path that reaches it."""
    visited: set[int] = set()

    def walk(node: yaml.Node, path: str) -> FieldError | None:
        if id(node) in visited:
            return None
        visited.add(id(node))
        if isinstance(node, yaml.MappingNode):
            seen: set[str] = set()
            for key_node, value_node in node.value:
                scalar = isinstance(key_node, yaml.ScalarNode)
                here = _join(path, str(key_node.value)) if scalar else path
                if scalar and key_node.value != "<<":
                    if key_node.value in seen:
                        line = key_node.start_mark.line + 1
                        return FieldError(here, f"is written twice (again at line {line})")
                    seen.add(key_node.value)
                found = walk(value_node, here)
                if found is not None:
                    return found
        elif isinstance(node, yaml.SequenceNode):
            for i, item in enumerate(node.value):
                found = walk(item, _join(path, str(i)))
                if found is not None:
                    return found
        return None

    return walk(root, "")


def _refused(problem: str, line: int | None = None) -> SpecError:
    where = f" (at line {line})" if line is not None else ""
    return SpecError([FieldError("", f"{problem}{where}; the document is refused")])


def _short(exc: Exception) -> str:
    """An exception's message up to its first ';' (Python's digit-limit message goes on to
    name an interpreter setting that is no business of the user's)."""
    return str(exc).split(";", 1)[0]


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def describe(value: Any) -> str:
    """How an error message names a value's type."""
    if value is None:
        return "nothing"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, bool):
        return f"{str(value).lower()}"
    if isinstance(value, (int, float)):
        return f"the number {value!r}"
    if isinstance(value, str):
        return f"text {value!r}"
    return type(value).__name__
