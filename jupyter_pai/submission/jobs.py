"""A job file (or document) submitted with its parameters and overrides."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..backends.base import Backend
from ..backends.models import FieldWarning, SubmitResult
from ..errors import FieldError, SpecError
from ..spec.parse import ParsedJob, parse_job
from ..spec.shortform import parse_gpu_request
from .images import ImagePolicy

#: A job as a submitter gives it: YAML or JSON text, or the document as a mapping.
JobSource = str | bytes | Mapping[str, Any]


@dataclass(frozen=True)
class JobRequest:
    """A job and what the submitter overrides in it (``--param``, ``--vc``, ``--name``)."""

    source: JobSource
    parameters: Mapping[str, Any] | None = None
    virtual_cluster: str | None = None
    name: str | None = None

    def parse(self) -> ParsedJob:
        return parse_job(
            self.source,
            parameters=self.parameters,
            virtual_cluster=self.virtual_cluster,
            name=self.name,
        )


def parse_gpus(text: str, where: str = "--gpus") -> tuple[str | None, int]:
    """``--gpus 2`` or ``--gpus H100-80GB:2``, as the CLI and the magics take it: (type or
    None, count). A bare number passes as it is (where it is used says if it is too small)."""
    try:
        return None, int(text)
    except ValueError:
        pass
    try:
        return parse_gpu_request(text)
    except ValueError as error:
        raise SpecError([FieldError(where, str(error))]) from None


def parse_params(pairs: list[str]) -> dict[str, str]:
    """``--param K=V`` pairs, as the CLI and ``%pai submit`` take them."""
    params = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise SpecError([FieldError("--param", f"{pair!r} is not K=V")])
        params[key] = value
    return params


async def submit_job(
    backend: Backend,
    parsed: ParsedJob,
    *,
    working_dir: str | None = None,
    images: ImagePolicy | None = None,
) -> SubmitResult:
    """Submit a parsed job (the caller parses: on its loop, or in the server's parser
    process); the result carries every warning, the parser's and what ``backend`` will
    not run as the job wrote it. ``images``: refuse images the policy does not allow, and
    tags a listed registry does not have."""
    if images is not None:
        await images.check(parsed.job)
    job = await backend.submit(parsed.job, working_dir=working_dir)
    found = parsed.warnings + backend.submission_warnings(parsed.job)
    return SubmitResult(job=job, warnings=field_warnings(found))


def field_warnings(errors: list[FieldError]) -> list[FieldWarning]:
    return [FieldWarning(path=e.path, message=e.message) for e in errors]
