"""Turn YAML / JSON / mappings into a validated :class:`JobProtocol`, or a :class:`SpecError`
whose every entry names the field path and what to do."""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from ..errors import FieldError, SpecError
from .checks import check_job
from .protocol import JobProtocol
from .shortform import expand, is_short_form


@dataclass
class ParsedJob:
    job: JobProtocol
    warnings: list[FieldError] = field(default_factory=list)


def load_document(source: str | bytes | Mapping[str, Any]) -> dict[str, Any]:
    """YAML (a superset of JSON) or an already-parsed mapping → a plain dict."""
    if isinstance(source, Mapping):
        return copy.deepcopy(dict(source))
    text = source.decode("utf-8", errors="replace") if isinstance(source, bytes) else source
    if not text.strip():
        raise SpecError([FieldError("", "the job specification is empty")])
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise SpecError([FieldError("", f"not valid YAML or JSON{where}: {problem}")]) from None
    if not isinstance(doc, dict):
        raise SpecError(
            [FieldError("", f"the job specification must be a mapping, not {type(doc).__name__}")]
        )
    return doc


def parse_job(
    source: str | bytes | Mapping[str, Any],
    *,
    parameters: Mapping[str, Any] | None = None,
    virtual_cluster: str | None = None,
    name: str | None = None,
) -> ParsedJob:
    """Validate a job; ``parameters``, ``virtual_cluster`` and ``name`` override the document
    (the CLI's ``--param``, ``--vc`` and the magics' options)."""
    doc = load_document(source)
    if is_short_form(doc):
        doc = expand(doc)
    if parameters:
        doc["parameters"] = {**(doc.get("parameters") or {}), **parameters}
    if virtual_cluster:
        defaults = doc.get("defaults") if isinstance(doc.get("defaults"), dict) else {}
        doc["defaults"] = {**defaults, "virtualCluster": virtual_cluster}
    if name:
        doc["name"] = name
    try:
        job = JobProtocol.model_validate(doc)
    except ValidationError as exc:
        raise SpecError([_field_error(e) for e in exc.errors()]) from None
    errors = check_job(job)
    if errors:
        raise SpecError(errors)
    return ParsedJob(job=job, warnings=unknown_fields(job))


def parse_json(text: str | bytes) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise SpecError([FieldError("", f"not valid JSON: {exc}")]) from None


def unknown_fields(model: BaseModel, path: str = "") -> list[FieldError]:
    """Fields the protocol does not define, reported as warnings (never as errors)."""
    found: list[FieldError] = []
    for key in model.model_extra or {}:
        found.append(FieldError(_join(path, key), "unknown field, ignored"))
    for name, info in type(model).model_fields.items():
        value = getattr(model, name)
        here = _join(path, info.alias or name)
        for sub_path, item in _children(here, value):
            found += unknown_fields(item, sub_path)
    return found


def _children(path: str, value: Any) -> list[tuple[str, BaseModel]]:
    if isinstance(value, BaseModel):
        return [(path, value)]
    if isinstance(value, list):
        return [(f"{path}.{i}", v) for i, v in enumerate(value) if isinstance(v, BaseModel)]
    if isinstance(value, dict):
        return [(f"{path}.{k}", v) for k, v in value.items() if isinstance(v, BaseModel)]
    return []


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _field_error(err: Any) -> FieldError:
    loc = [str(p) for p in err["loc"]]
    # pydantic adds the failing validator's name for unions / literals; drop those parts.
    loc = [p for p in loc if not p.startswith(("function-", "literal[", "str", "list[", "int", "float"))]
    return FieldError(".".join(loc), _message(err))


def _message(err: Any) -> str:
    kind: str = err["type"]
    ctx = err.get("ctx") or {}
    given = err.get("input")
    if kind == "missing":
        return "is required"
    if kind == "greater_than_equal":
        return f"must be ≥ {ctx.get('ge')} (got {given!r})"
    if kind == "greater_than":
        return f"must be > {ctx.get('gt')} (got {given!r})"
    if kind == "literal_error":
        return f"must be {ctx.get('expected')} (got {given!r})"
    if kind == "string_pattern_mismatch":
        return f"{given!r} must match {ctx.get('pattern')} (letters, digits, _ and -)"
    if kind == "string_too_long":
        return f"must be at most {ctx.get('max_length')} characters"
    if kind in ("string_too_short", "too_short"):
        return "must not be empty"
    if kind in ("int_parsing", "int_type", "int_from_float"):
        return f"must be a whole number (got {given!r})"
    if kind in ("float_parsing", "float_type"):
        return f"must be a number (got {given!r})"
    if kind in ("string_type",):
        return f"must be text (got {type(given).__name__})"
    if kind in ("bool_parsing", "bool_type"):
        return f"must be true or false (got {given!r})"
    if kind in ("list_type",):
        return f"must be a list (got {type(given).__name__})"
    if kind in ("dict_type", "model_type", "model_attributes_type"):
        return f"must be a mapping (got {type(given).__name__})"
    if kind == "value_error":
        return str(ctx.get("error", err["msg"]))
    return str(err["msg"])
