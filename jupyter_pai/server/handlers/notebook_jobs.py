"""``POST notebook-jobs``: a notebook of the server's file tree run as a job (the file
browser's "Run as PAI job"); the executed notebook is written beside it, or into a storage."""

from __future__ import annotations

import asyncio
from functools import partial
from pathlib import Path

from tornado import web

from ...errors import BadRequest, FieldError
from ...spec.parse import parse_job
from ...submission.nbjob import NotebookRun
from ...submission.notebooks import submit_notebook
from ..parsing import in_worker, notebook_job_request
from .base import PAIHandler, authorized


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
        result = await submit_notebook(
            await self.backend(),
            NotebookRun.requested(request, source),
            root=root,
            parse=partial(in_worker, parse_job),  # the job's document, off the event loop
            images=await self.pai.image_policy(),
        )
        self.set_header("Location", self.reverse_url_job(result.job.id))
        self.send_json(result, status=201)

    def reverse_url_job(self, job_id: str) -> str:
        return self.request.path.rstrip("/").rsplit("/", 1)[0] + "/jobs/" + job_id
