"""A Jupyter server's jupyter-pai REST API (``<url>/pai/api/…``) as a client
:class:`~.connection.Connection`: for a script or notebook that should see what a server
(perhaps on another machine, with its own backend and credentials) sees.

Answers are read into the same models the server dumps; error answers become the core's
typed errors again (``{"message", "errors"}`` with their status), so callers catch
``NotFound`` or ``SpecError`` whichever way the client is connected.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Mapping
from dataclasses import replace
from typing import Any, TypeVar
from urllib.parse import quote

import aiohttp
import yarl
from pydantic import BaseModel

from ..backends.base import LogQuery
from ..backends.models import (
    FieldWarning,
    Info,
    JobDetail,
    JobEvent,
    JobEventList,
    JobFilter,
    JobList,
    JobSummary,
    NotebookJobRequest,
    NotebookJobResult,
    Storage,
    StorageList,
    StorageListing,
    SubmitResult,
    VirtualCluster,
    VirtualClusterList,
)
from ..errors import (
    BadRequest,
    Conflict,
    FieldError,
    Forbidden,
    NotFound,
    PAIError,
    SpecError,
    Unavailable,
)
from ..images.choices import ImageChoices
from ..submission.jobs import JobRequest, field_warnings
from .connection import Connection

M = TypeVar("M", bound=BaseModel)
PREFIX = "pai/api"


def error_from(status: int, body: bytes, what: str) -> PAIError:
    """The typed error a REST error answer stands for."""
    message, errors = f"{what}: HTTP {status}", []
    try:
        data = json.loads(body)
        message = str(data.get("message") or message)
        errors = [
            FieldError(str(e.get("path", "")), str(e.get("message", "")))
            for e in data.get("errors") or []
        ]
    except (ValueError, AttributeError):
        pass  # not our JSON (a proxy's page): the status says enough
    if status == 400:
        return SpecError(errors, message) if errors else BadRequest(message)
    classes: dict[int, type[PAIError]] = {
        401: Forbidden,
        403: Forbidden,
        404: NotFound,
        409: Conflict,
        502: Unavailable,
        503: Unavailable,
        504: Unavailable,
    }
    error = classes.get(status, PAIError)(message, errors)
    error.status = status
    return error


class RestConnection(Connection):
    """``url``: the Jupyter server's base URL (``http://host:8888/`` or with a base path);
    ``token``: its API token (sent as ``Authorization: token …``, which also exempts the
    requests from the XSRF check browsers need)."""

    #: Jobs per ``GET jobs`` request when listing.
    page_size = 500

    def __init__(self, url: str, token: str | None = None, *, timeout: float = 30) -> None:
        self.base = url.rstrip("/") + "/" + PREFIX + "/"
        self._headers = {"Authorization": f"token {token}"} if token else {}
        self._timeout = timeout
        self._session: aiohttp.ClientSession | None = None

    def session(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(headers=self._headers)
        return self._session

    async def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        data: str | bytes | None = None,
        content_type: str | None = None,
        timeout: float | None = None,
    ) -> aiohttp.ClientResponse:
        """Send one request; a non-2xx answer raises its typed error."""
        headers = {"Content-Type": content_type} if content_type else {}
        what = f"{method} {PREFIX}/{path}"
        query = [(k, str(v)) for k, v in (params or {}).items() if v is not None]
        try:
            response = await self.session().request(
                method,
                # As written: a base path such as /a%40b/ must reach the server encoded.
                yarl.URL(self.base + path, encoded=True),
                params=query,
                data=data,
                headers=headers,
                timeout=aiohttp.ClientTimeout(
                    total=timeout, sock_connect=self._timeout, sock_read=timeout
                ),
            )
        except (aiohttp.ClientError, OSError) as exc:
            raise Unavailable(f"{what}: Jupyter server unreachable: {exc}") from None
        if response.status >= 300:
            body = await response.read()
            response.release()
            raise error_from(response.status, body, what)
        return response

    async def read(self, model: type[M], method: str, path: str, **kwargs: Any) -> M:
        response = await self.request(method, path, timeout=self._timeout, **kwargs)
        async with response:
            return model.model_validate_json(await response.read())

    @staticmethod
    def job_path(job_id: str, *rest: str) -> str:
        return "/".join(["jobs", quote(job_id, safe=""), *rest])

    async def info(self) -> Info:
        return await self.read(Info, "GET", "info")

    async def submit(self, request: JobRequest) -> SubmitResult:
        local: list[FieldWarning] = []
        source = request.source
        if request.parameters or request.name or isinstance(source, Mapping):
            # The API takes the document only: apply parameters and name here, as
            # ``jupyter pai submit --param`` does, and send the protocol-v2 result (the
            # virtual cluster goes as ``?vc=``).
            parsed = replace(request, virtual_cluster=None).parse()
            body: str | bytes = json.dumps(parsed.document)
            content_type = "application/json"
            local = field_warnings(parsed.warnings)
        else:
            body, content_type = source, "text/yaml"
        result = await self.read(
            SubmitResult,
            "POST",
            "jobs",
            data=body,
            content_type=content_type,
            params={"vc": request.virtual_cluster},
        )
        seen = {(w.path, w.message) for w in result.warnings}
        result.warnings[:0] = [w for w in local if (w.path, w.message) not in seen]
        return result

    async def submit_notebook(self, request: NotebookJobRequest) -> NotebookJobResult:
        body = request.model_dump_json(by_alias=True, exclude_none=True)
        return await self.read(
            NotebookJobResult,
            "POST",
            "notebook-jobs",
            data=body,
            content_type="application/json",
        )

    async def list_jobs(self, query: JobFilter) -> list[JobSummary]:
        """Every job the filters match, read page by page (``continue``): no single answer
        grows with the number of jobs. A server without pages answers whole at once."""
        params: dict[str, Any] = {"vc": query.vc, "user": query.user, "keyword": query.keyword}
        if query.state:
            params["state"] = ",".join(s.value for s in query.state)
        params["limit"] = self.page_size
        jobs: list[JobSummary] = []
        while True:
            page = await self.read(JobList, "GET", "jobs", params=params)
            jobs += page.items
            if not page.continue_:
                return jobs
            params["continue"] = page.continue_

    async def get_job(self, job_id: str) -> JobDetail:
        return await self.read(JobDetail, "GET", self.job_path(job_id))

    async def stop_job(self, job_id: str) -> JobDetail:
        return await self.read(JobDetail, "DELETE", self.job_path(job_id))

    async def events(self, job_id: str) -> list[JobEvent]:
        return (await self.read(JobEventList, "GET", self.job_path(job_id, "events"))).items

    async def logs(self, job_id: str, query: LogQuery) -> AsyncIterator[bytes]:
        params = {
            "role": query.role,
            "index": query.index,
            "follow": "true" if query.follow else None,
            "tail": query.tail,
            "offset": query.offset,
            "limit": query.limit,
            "attempt": query.attempt,
        }
        # A followed log stays open while the task runs: no read timeout then.
        timeout = None if query.follow else self._timeout
        response = await self.request(
            "GET", self.job_path(job_id, "logs"), params=params, timeout=timeout
        )
        async with response:
            async for chunk in response.content.iter_any():
                yield chunk

    async def virtual_clusters(self) -> list[VirtualCluster]:
        return (await self.read(VirtualClusterList, "GET", "virtual-clusters")).items

    async def images(self) -> ImageChoices:
        return await self.read(ImageChoices, "GET", "images")

    async def storages(self) -> list[Storage]:
        return (await self.read(StorageList, "GET", "storage")).items

    async def read_storage(self, name: str, path: str) -> StorageListing | bytes:
        where = "/".join(quote(p, safe="") for p in [name, *path.split("/")] if p)
        response = await self.request("GET", f"storage/{where}", timeout=self._timeout)
        async with response:
            body = await response.read()
            if response.content_type == "application/json":
                # A folder's listing, or a .json file that is not one.
                with contextlib.suppress(ValueError):
                    return StorageListing.model_validate_json(body)
            return body

    async def close(self) -> None:
        if self._session is not None:
            session, self._session = self._session, None
            await session.close()
