"""``jupyter_pai.Client``: jobs, virtual clusters, images and storage from Python.

::

    from jupyter_pai import Client

    client = Client()                       # the configured backend, as `jupyter pai` uses it
    job = client.submit("train.yaml", params={"epochs": 2})
    job.wait(timeout=600)
    print(job.state, job.logs("worker", 1))

    remote = Client(url="http://127.0.0.1:8888/", token="…")   # a Jupyter server's REST API

Every blocking method, the client's and those of the :class:`~.job.Job` it returns, has an
``*_async`` twin for code that runs in an event loop (a kernel's cells may ``await``). The
blocking ones work in a kernel too: the client does its I/O on a private loop in a daemon
thread (:mod:`.loop`), never on the caller's.

Errors are the core's typed errors (:mod:`jupyter_pai.errors`): ``SpecError`` (a bad job,
its ``errors`` name the fields), ``NotFound``, ``Conflict`` (name taken), ``Forbidden``,
``Unavailable`` (cluster or server unreachable) — the same whether the client uses the
backend directly or a server.
"""

from __future__ import annotations

import asyncio
import os
import warnings
from collections.abc import Coroutine, Iterable, Mapping
from typing import Any, TypedDict, TypeVar, Unpack, overload

from traitlets.config import Config

from ..backends.models import (
    Image,
    Info,
    JobFilter,
    JobState,
    JobSummary,
    NotebookJobRequest,
    Storage,
    StorageListing,
    SubmitResult,
    VirtualCluster,
)
from ..errors import FieldError, SpecError
from ..images.choices import ImageChoices
from ..submission.jobs import JobRequest
from .connection import BackendConnection, Connection
from .job import Job
from .loop import LoopThread
from .sources import Spec, job_source
from .storage import StorageClient

__all__ = [
    "Client",
    "Job",
    "JobQuery",
    "StorageClient",
    "SubmissionWarning",
    "SubmitOptions",
]

T = TypeVar("T")


class SubmissionWarning(UserWarning):
    """Part of a submitted job was not taken as written (an ignored field, a converted
    OpenPAI v1 job, a runtime plugin this backend runs differently)."""


class SubmitOptions(TypedDict, total=False):
    """What :meth:`Client.submit` overrides in the job (its keyword arguments)."""

    vc: str | None
    name: str | None


class JobQuery(TypedDict, total=False):
    """Which jobs :meth:`Client.jobs` lists (its keyword arguments)."""

    #: One state or several (``"RUNNING"``, ``["WAITING", "RUNNING"]``).
    state: str | JobState | Iterable[str | JobState] | None
    vc: str | None
    user: str | None
    #: Matched against names and ids.
    keyword: str | None


class Client:
    """jupyter-pai from Python.

    ``Client()`` uses the backend configured for this machine, exactly as ``jupyter pai``
    does (``jupyter_pai_config.py``, ``JUPYTER_PAI_BACKEND``, the local state directory or
    your kubeconfig); ``backend="kubernetes"`` or a traitlets ``config`` override it. Tasks
    of local jobs run in ``working_dir`` (default: the current directory, a notebook's
    folder in a kernel).

    ``Client(url=…, token=…)`` uses a Jupyter server's REST API instead
    (``<url>/pai/api/``), with the server's backend and credentials.
    """

    def __init__(
        self,
        url: str | None = None,
        token: str | None = None,
        *,
        backend: str | None = None,
        config: Config | None = None,
        working_dir: str | os.PathLike[str] | None = None,
    ) -> None:
        self._connection: Connection
        if url:
            if backend or config is not None or working_dir is not None:
                raise ValueError(
                    "backend, config and working_dir are the server's when the client uses url"
                )
            from .rest import RestConnection  # aiohttp: imported only by those who use it

            self._connection = RestConnection(url, token)
        else:
            wd = os.fspath(working_dir) if working_dir is not None else None
            self._connection = BackendConnection(config, backend=backend, working_dir=wd)
        self.url = url
        self._loop = LoopThread()

    def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        return self._loop.run(coro)

    def __repr__(self) -> str:
        return f"<jupyter_pai.Client {self.url or 'configured backend'}>"

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- blocking --------------------------------------------------------------------------

    def info(self) -> Info:
        """The backend, its flavor, version, user and namespace."""
        return self._run(self._connection.info())

    def submit(
        self, spec: Spec, params: Mapping[str, Any] | None = None, **options: Unpack[SubmitOptions]
    ) -> Job:
        """Submit a job: a job file's path, YAML or JSON text, the document as a dict, or a
        ``JobProtocol``; OpenPAI protocol v2, the short form or OpenPAI v1 JSON.

        ``params`` set the job's ``parameters`` (``<% $parameters.k %>`` in commands), as
        ``jupyter pai submit --param k=v`` does; ``vc`` and ``name`` override the job's.
        Warnings about what was not taken as written are issued as
        :class:`SubmissionWarning` and kept in ``job.warnings``.
        """
        return self._job(self._run(self._submit(spec, params, **options)))

    def submit_notebook(
        self,
        path: str | os.PathLike[str],
        params: Mapping[str, Any] | None = None,
        *,
        gpus: int = 0,
        gpu_type: str | None = None,
        vc: str | None = None,
        image: str | None = None,
        name: str | None = None,
        storage: str | None = None,
    ) -> Job:
        """Run a notebook as a job, ``params`` injected as papermill does (``gpu_type``:
        ``H100-80GB``, see :meth:`vcs`); the executed
        notebook (outputs and errors included) is written beside it as ``<job name>.ipynb``
        (``job.executed_notebook``), or into ``storage`` (``NAME[/folder]``). ``path`` is
        on this machine, or in the server's tree for ``Client(url=…)``."""
        request = NotebookJobRequest(
            path=os.fspath(path),
            params={str(k): str(v) for k, v in (params or {}).items()},
            gpus=gpus,
            gpu_type=gpu_type,
            vc=vc,
            image=image,
            name=name,
            storage=storage,
        )
        result = self._run(self._connection.submit_notebook(request))
        job = self._job(SubmitResult(job=result.job, warnings=result.warnings))
        job.executed_notebook = result.output
        return job

    def jobs(self, **query: Unpack[JobQuery]) -> list[JobSummary]:
        """Jobs, newest first; ``state`` one state or several (``"RUNNING"``,
        ``["WAITING", "RUNNING"]``), ``vc``, ``user``, ``keyword`` matched against names
        and ids."""
        return self._run(self._connection.list_jobs(_filter(**query)))

    def job(self, job_id: str) -> Job:
        """The job with this id (``NotFound`` if there is none)."""
        return Job(self, self._run(self._connection.get_job(job_id)))

    def vcs(self) -> list[VirtualCluster]:
        """Virtual clusters: capacity, use, free GPUs and queue."""
        return self._run(self._connection.virtual_clusters())

    def images(self) -> list[Image]:
        """The admin's image catalogue (``PAIConfig.images``)."""
        return self.image_choices().items

    def image_choices(self) -> ImageChoices:
        """What image pickers offer: the catalogue (``.items``), the registries'
        repositories and tags (``.repositories``, newest tags first), each registry's state
        (``.registries``) and whether any typed reference is allowed (``.custom_images``)."""
        return self._run(self._connection.images())

    @overload
    def storage(self, name: None = None) -> list[Storage]: ...

    @overload
    def storage(self, name: str) -> StorageClient: ...

    @overload
    def storage(self, name: str, path: str) -> StorageListing | bytes: ...

    def storage(
        self, name: str | None = None, path: str | None = None
    ) -> list[Storage] | StorageClient | StorageListing | bytes:
        """``storage()``: the storages jobs may mount; ``storage(name)``: that storage to
        work in (:class:`~.storage.StorageClient`: ``ls``, ``upload``, ``download``,
        ``rm``, ``mkdir``, ``mv``); ``storage(name, path)``: a folder's listing, or a small
        file's bytes."""
        if name is not None and path is None:
            return StorageClient(name, self._connection, self._loop)
        return self._run(self._storage(name, path or ""))

    def close(self) -> None:
        """Close connections and the client's loop thread; jobs keep running."""
        if self._loop.in_loop_thread():
            raise RuntimeError("close the client from outside its own loop")
        try:
            self._run(self._connection.close())
        finally:
            self._loop.stop()

    # -- async twins -----------------------------------------------------------------------

    async def info_async(self) -> Info:
        return await self._loop.run_async(self._connection.info())

    async def submit_async(
        self, spec: Spec, params: Mapping[str, Any] | None = None, **options: Unpack[SubmitOptions]
    ) -> Job:
        return self._job(await self._loop.run_async(self._submit(spec, params, **options)))

    async def jobs_async(self, **query: Unpack[JobQuery]) -> list[JobSummary]:
        return await self._loop.run_async(self._connection.list_jobs(_filter(**query)))

    async def job_async(self, job_id: str) -> Job:
        return Job(self, await self._loop.run_async(self._connection.get_job(job_id)))

    async def vcs_async(self) -> list[VirtualCluster]:
        return await self._loop.run_async(self._connection.virtual_clusters())

    async def images_async(self) -> list[Image]:
        return (await self.image_choices_async()).items

    async def image_choices_async(self) -> ImageChoices:
        return await self._loop.run_async(self._connection.images())

    async def storage_async(
        self, name: str | None = None, path: str = ""
    ) -> list[Storage] | StorageListing | bytes:
        return await self._loop.run_async(self._storage(name, path))

    async def close_async(self) -> None:
        await self._loop.run_async(self._connection.close())
        await asyncio.to_thread(self._loop.stop)

    # -- shared ----------------------------------------------------------------------------

    async def _submit(
        self,
        spec: Spec,
        params: Mapping[str, Any] | None,
        *,
        vc: str | None = None,
        name: str | None = None,
    ) -> SubmitResult:
        if isinstance(spec, (str, os.PathLike)) and os.fspath(spec).endswith(".ipynb"):
            raise SpecError(
                [FieldError("file", "a notebook runs with submit_notebook(path, params, gpus=…)")]
            )
        source = await asyncio.to_thread(job_source, spec)
        parameters = {str(k): v for k, v in (params or {}).items()}
        return await self._connection.submit(JobRequest(source, parameters, vc, name))

    def _job(self, result: SubmitResult) -> Job:
        for w in result.warnings:
            text = f"{w.path}: {w.message}" if w.path else w.message
            warnings.warn(f"{result.job.id}: {text}", SubmissionWarning, stacklevel=3)
        return Job(self, result.job, result.warnings)

    async def _storage(self, name: str | None, path: str) -> list[Storage] | StorageListing | bytes:
        if name is None:
            return await self._connection.storages()
        return await self._connection.read_storage(name, path)


def _filter(
    *,
    state: str | JobState | Iterable[str | JobState] | None = None,
    vc: str | None = None,
    user: str | None = None,
    keyword: str | None = None,
) -> JobFilter:
    states: list[JobState] | None = None
    if state is not None:
        given = [state] if isinstance(state, (str, JobState)) else list(state)
        try:
            states = [s if isinstance(s, JobState) else JobState(str(s).upper()) for s in given]
        except ValueError:
            raise SpecError(
                [FieldError("state", f"{given!r}: one of {', '.join(s.value for s in JobState)}")],
                "unknown job state",
            ) from None
    return JobFilter(vc=vc, state=states, user=user, keyword=keyword)
