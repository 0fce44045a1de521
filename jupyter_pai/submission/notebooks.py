"""A notebook submitted as a job: the job :mod:`.nbjob` builds, parsed and submitted, with
the request's own names on what is refused."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from ..backends.base import Backend
from ..backends.models import NotebookJobResult
from ..errors import FieldError, PAIError
from ..spec.parse import ParsedJob, parse_job
from .images import ImagePolicy
from .jobs import submit_job
from .nbjob import NotebookRun, prepare

#: Paths of the job a notebook becomes, as the request names them.
AS_REQUESTED = {
    "gpus": "gpus",
    "gpuType": "gpuType",
    "extras.hivedScheduler.taskRoles.worker.skuType": "gpuType",
    "taskRoles.worker.resourcePerInstance.gpu": "gpus",
    "defaults.virtualCluster": "vc",
    "image": "image",
    "prerequisites.0.uri": "image",
    "name": "path",
}

#: How the notebook's job is parsed: here, or (the server) off the event loop.
Parse = Callable[[dict[str, Any]], Awaitable[ParsedJob]]


async def parse_here(job: dict[str, Any]) -> ParsedJob:
    return parse_job(job)


async def submit_notebook(
    backend: Backend,
    run: NotebookRun,
    *,
    root: Path | None = None,
    parse: Parse = parse_here,
    images: ImagePolicy | None = None,
) -> NotebookJobResult:
    """Run a notebook as a job; the result carries every warning and where the executed
    notebook goes: ``output_location`` as the task writes it, ``output`` as the one who
    asked opens it: relative to ``root`` (a server's file tree) when it lies there; without
    a root, the path itself unless it goes into a storage."""
    prepared = await prepare(backend, run)
    try:
        result = await submit_job(
            backend, await parse(prepared.job), working_dir=prepared.working_dir, images=images
        )
    except PAIError as error:
        # Name the request's fields, not those of the job it became.
        error.errors = [
            FieldError(AS_REQUESTED.get(e.path, e.path), e.message) for e in error.errors
        ]
        raise
    output = Path(prepared.output)
    if root is not None:
        opened = str(output.relative_to(root)) if root in output.parents else None
    else:
        opened = None if run.storage else prepared.output
    return NotebookJobResult(
        job=result.job, warnings=result.warnings, output=opened, output_location=prepared.output
    )
