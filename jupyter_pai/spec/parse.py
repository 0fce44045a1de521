"""Turn YAML / JSON / mappings into a validated :class:`JobProtocol`, or a :class:`SpecError`
whose every entry names the field path and what is wrong."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

from ..errors import FieldError, SpecError
from .checks import check_job, job_warnings
from .document import describe, load_document
from .pluginparams import plugin_errors
from .protocol import PATTERN_HELP, Deployment, JobProtocol, Prerequisite
from .shortform import ShortForm, expand, is_short_form, short_path
from .v1 import convert as convert_v1
from .v1 import is_v1

SourceFormat = Literal["v2", "short", "v1"]
#: Errors, and warnings, listed at most: past this a document needs rewriting, not a list
#: of each fault, and renaming paths for the short form or v1 costs per entry.
MAX_REPORTED = 100


@dataclass
class ParsedJob:
    job: JobProtocol
    warnings: list[FieldError] = field(default_factory=list)
    #: True when the input was the short form (``image``, ``command``, ``gpus`` …).
    short_form: bool = False
    #: What the user wrote: protocol v2, the short form, or an OpenPAI v1 JSON job.
    format: SourceFormat = "v2"
    #: The protocol-v2 document the job was validated from (expanded or converted).
    document: dict[str, Any] = field(default_factory=dict)


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
    converted = convert_v1(doc) if is_v1(doc) else None
    if converted is not None:
        doc = converted.doc
    short = is_short_form(doc)
    if name:
        doc["name"] = name
    if parameters:
        given = doc.get("parameters")
        doc["parameters"] = {**(given if isinstance(given, dict) else {}), **parameters}
    if virtual_cluster:
        if short:
            doc["vc"] = virtual_cluster
        else:
            given = doc.get("defaults")
            defaults = given if isinstance(given, dict) else {}
            doc["defaults"] = {**defaults, "virtualCluster": virtual_cluster}

    source_doc = doc
    if short:
        try:
            ShortForm.model_validate(doc)
        except ValidationError as exc:
            raise _spec_error(_field_errors(exc, doc)) from None
        doc = expand(doc)

    def rename(errors: list[FieldError]) -> list[FieldError]:
        """Paths as the user wrote the document (short-form keys, v1 fields)."""
        errors = _listed(errors)
        if short:
            return [FieldError(short_path(source_doc, e.path), e.message) for e in errors]
        if converted is not None:
            return [FieldError(converted.v1_path(e.path), e.message) for e in errors]
        return errors

    try:
        job = JobProtocol.model_validate(doc)
    except ValidationError as exc:
        raise _spec_error(_field_errors(exc, doc), rename) from None
    # What a runtime plugin cannot run with is refused on every backend, here already.
    errors = check_job(job) + plugin_errors(job)
    if errors:
        raise _spec_error(errors, rename)
    warnings = rename(unknown_fields(job) + job_warnings(job))
    if converted is not None:
        warnings = _listed(converted.warnings + warnings)
    fmt: SourceFormat = "short" if short else "v1" if converted is not None else "v2"
    return ParsedJob(job=job, warnings=warnings, short_form=short, format=fmt, document=doc)


def unknown_fields(model: BaseModel, path: str = "") -> list[FieldError]:
    """Fields the protocol does not define, reported as warnings (never as errors)."""
    found: list[FieldError] = []
    for key in model.model_extra or {}:
        if not _open_fields(model):
            found.append(FieldError(_join(path, key), "unknown field, ignored"))
    for name, info in type(model).model_fields.items():
        value = getattr(model, name)
        here = _join(path, info.alias or name)
        for sub_path, item in _children(here, value):
            found += unknown_fields(item, sub_path)
    return found


def _open_fields(model: BaseModel) -> bool:
    """Where the protocol lets a job add its own fields: a deployment, and a script, data or
    output prerequisite (the settings of the plugin that handles it)."""
    if isinstance(model, Prerequisite):
        return model.type != "dockerimage"
    return isinstance(model, Deployment)


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


# Parts pydantic adds to an error's location that are not fields: the branch of a union
# (``str``, ``list[str]``), a validator (``function-after[…]``), a dict key marker.
_NOT_A_FIELD = re.compile(r"^(\[key\]|str|int|float|bool|none|[a-z-]+\[.*\])$")


def _field_errors(exc: ValidationError, doc: Any) -> list[FieldError]:
    found = (FieldError(_path(err["loc"], doc), _message(err)) for err in exc.errors())
    return list(dict.fromkeys(found))  # once each, in order


def _listed(found: list[FieldError]) -> list[FieldError]:
    """The first :data:`MAX_REPORTED` entries, and one saying how many more there are."""
    if len(found) <= MAX_REPORTED:
        return found
    rest = len(found) - MAX_REPORTED
    return [*found[:MAX_REPORTED], FieldError("", f"{rest} more not listed")]


def _spec_error(
    errors: list[FieldError], rename: Callable[[list[FieldError]], list[FieldError]] = _listed
) -> SpecError:
    """``rename`` lists at most :data:`MAX_REPORTED`; the message counts them all."""
    first = rename(errors[:1])[0]
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return SpecError(rename(errors), f"invalid job specification: {first}{more}")


def _path(loc: tuple[int | str, ...], doc: Any) -> str:
    """The location as the user wrote it: parts present in the input are kept as they are,
    pydantic's own markers (union branches, validator names) are dropped."""
    parts: list[str] = []
    current: Any = doc
    for part in loc:
        if isinstance(current, dict) and part in current:
            current = current[part]
        elif isinstance(current, list) and isinstance(part, int) and 0 <= part < len(current):
            current = current[part]
        elif isinstance(part, str) and _NOT_A_FIELD.match(part):
            continue
        else:
            current = None
        parts.append(str(part))
    return ".".join(parts)


def _message(err: Any) -> str:
    kind: str = err["type"]
    ctx = err.get("ctx") or {}
    given = err.get("input")
    if kind == "missing":
        return "is required"
    if kind == "greater_than_equal":
        return f"must be ≥ {_number(ctx.get('ge'))} (got {given!r})"
    if kind == "greater_than":
        return f"must be > {_number(ctx.get('gt'))} (got {given!r})"
    if kind == "less_than_equal":
        return f"must be ≤ {_number(ctx.get('le'))} (got {given!r})"
    if kind == "literal_error":
        return f"must be {ctx.get('expected')} (got {given!r})"
    if kind == "string_pattern_mismatch":
        pattern = str(ctx.get("pattern"))
        help_ = PATTERN_HELP.get(pattern)
        what = f"{given!r} is not a valid name" if err["loc"][-1] == "[key]" else f"{given!r}"
        return f"{what}: must match {pattern}" + (f" ({help_})" if help_ else "")
    if kind in ("string_too_long", "too_long"):
        unit = "characters" if isinstance(given, str) else "entries"
        size = len(given) if isinstance(given, (str, list, dict)) else "more"
        return f"must be at most {ctx.get('max_length')} {unit} (got {size})"
    if kind in ("string_too_short", "too_short"):
        return "must not be empty"
    if kind in ("int_parsing", "int_type", "int_from_float"):
        return f"must be a whole number (got {given!r})"
    if kind in ("float_parsing", "float_type", "finite_number"):
        return f"must be a number (got {given!r})"
    if kind == "string_type":
        return f"must be text (got {describe(given)})"
    if kind in ("bool_parsing", "bool_type"):
        return f"must be true or false (got {given!r})"
    if kind == "list_type":
        return f"must be a list (got {describe(given)})"
    if kind in ("dict_type", "model_type", "model_attributes_type"):
        return f"must be a mapping (got {describe(given)})"
    if kind == "value_error":
        return str(ctx.get("error", err["msg"]))
    return str(err["msg"])


def _number(value: Any) -> Any:
    return int(value) if isinstance(value, float) and value.is_integer() else value
