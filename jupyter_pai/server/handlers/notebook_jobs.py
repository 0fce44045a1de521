"""``POST notebook-jobs``: a notebook of the server's file tree run as a job (the file
browser's "Run as PAI job"); the executed notebook is written beside it, or into a storage."""

from __future__ import annotations

import asyncio
from pathlib import Path

from tornado import web

from ...backends.models import FieldWarning, NotebookJobResult
from ...errors import BadRequest, FieldError, PAIError
from ...notebook.nbjob import prepare
from ...spec.parse import parse_job
from ..parsing import in_worker, notebook_job_request
from .base import PAIHandler, authorized

#: Paths of the job a request becomes, as the request names them.
AS_REQUESTED = {
    "gpus": "gpus",
    "taskRoles.worker.resourcePerInstance.gpu": "gpus",
    "defaults.virtualCluster": "vc",
    "image": "image",
    "prerequisites.0.uri": "image",
    "name": "path",
}


def locate(working_dir: str, relative: str) -> tuple[Path, Path]:
    """The server's root and the notebook ``relative`` under it (refusing anything that
    leaves it; links resolved)."""
    root = Path(working_dir).resolve()
    try:
        path = (root / relative.lstrip("/")).resolve()
    except (OSError, ValueError):  # a NUL byte, a name too long: no file is called that
        raise BadRequest("no such notebook", [FieldError("path", relative)]) from None
    if path != root and root not in path.parents:
        raise BadRequest("path leaves the server's root", [FieldError("path", relative)])
    if path.suffix != ".ipynb":
        raise BadRequest("not a notebook", [FieldError("path", f"{relative} is not a .ipynb")])
    return root, path


class NotebookJobsHandler(PAIHandler):
    @web.authenticated
    @authorized("write")
    async def post(self) -> None:
        request = await in_worker(notebook_job_request, self.request.body)
        root, source = await asyncio.to_thread(locate, self.pai.working_dir, request.path)
        backend = await self.backend()
        prepared = await prepare(
            backend,
            source,
            params=request.params,
            gpus=request.gpus,
            vc=request.vc,
            image=request.image,
            storage=request.storage,
            name=request.name,
        )
        try:
            parsed = await in_worker(parse_job, prepared.job)
            job = await backend.submit(parsed.job, working_dir=prepared.working_dir)
        except PAIError as error:
            # Name the request's fields, not those of the job it became.
            error.errors = [
                FieldError(AS_REQUESTED.get(e.path, e.path), e.message) for e in error.errors
            ]
            raise
        output = Path(prepared.output)
        in_tree = root in output.parents  # a local storage may lie in the tree too
        self.set_header("Location", self.reverse_url_job(job.id))
        self.send_json(
            NotebookJobResult(
                job=job,
                warnings=[FieldWarning.model_validate(w.to_json()) for w in parsed.warnings],
                output=str(output.relative_to(root)) if in_tree else None,
                output_location=prepared.output,
            ),
            status=201,
        )

    def reverse_url_job(self, job_id: str) -> str:
        return self.request.path.rstrip("/").rsplit("/", 1)[0] + "/jobs/" + job_id
