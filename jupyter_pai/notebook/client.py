"""``jupyter_pai.Client``: jobs, virtual clusters, images and storage from Python.

::

    from jupyter_pai import Client

    client = Client()                       # the configured backend, as `jupyter pai` uses it
    job = client.submit("train.yaml", params={"epochs": 2})
    job.wait(timeout=600)
    print(job.state, job.logs("worker", 1))

    remote = Client(url="http://127.0.0.1:8888/", token="…")   # a Jupyter server's REST API

Every blocking method has an ``*_async`` twin for code that runs in an event loop (a
kernel's cells may ``await``). The blocking ones work in a kernel too: the client does its
I/O on a private loop in a daemon thread (:mod:`.loop`), never on the caller's.

Errors are the core's typed errors (:mod:`jupyter_pai.errors`): ``SpecError`` (a bad job,
its ``errors`` name the fields), ``NotFound``, ``Conflict`` (name taken), ``Forbidden``,
``Unavailable`` (cluster or server unreachable) — the same whether the client uses the
backend directly or a server.
"""

from __future__ import annotations

import asyncio
import os
import time
import warnings
from collections.abc import AsyncIterator, Coroutine, Iterable, Iterator, Mapping
from typing import Any, Literal, TypeVar, overload

from traitlets.config import Config

from ..backends.base import LogQuery
from ..backends.models import (
    FieldWarning,
    Image,
    Info,
    JobDetail,
    JobEvent,
    JobFilter,
    JobState,
    JobSummary,
    NotebookJobRequest,
    Storage,
    StorageListing,
    SubmitResult,
    TaskStatus,
    VirtualCluster,
)
from ..errors import FieldError, SpecError
from .connection import BackendConnection, Connection
from .follow import TaskLine, decode, decode_async, follow_job, follow_task
from .loop import LoopThread
from .outcome import TAIL_LINES, FailedTask, JobFailed, failed_tasks
from .sources import Spec, job_source

T = TypeVar("T")

#: How often :meth:`Job.wait` looks at the job (seconds; it backs off to ``MAX_POLL``).
FIRST_POLL = 0.1
MAX_POLL = 1.0


class SubmissionWarning(UserWarning):
    """Part of a submitted job was not taken as written (an ignored field, a converted
    OpenPAI v1 job, a runtime plugin this backend runs differently)."""


class Job:
    """A submitted job: what the backend said about it last, and what can be done with it.

    ``detail`` is the last :class:`~jupyter_pai.backends.models.JobDetail` read;
    :attr:`state` reads the job again unless it has already ended."""

    def __init__(
        self, client: Client, detail: JobDetail, warnings: Iterable[FieldWarning] = ()
    ) -> None:
        self.client = client
        self.detail = detail
        #: What the submission did not take as written (empty for a job looked up by id).
        self.warnings: list[FieldWarning] = list(warnings)
        #: A notebook job's executed notebook, where it will be written (submit_notebook).
        self.executed_notebook: str | None = None

    @property
    def id(self) -> str:
        """``<user>~<name>``, as in OpenPAI."""
        return self.detail.id

    @property
    def name(self) -> str:
        return self.detail.name

    @property
    def state(self) -> JobState:
        """The job's state now (read again unless it has ended)."""
        if not self.detail.state.terminal:
            self.refresh()
        return self.detail.state

    @property
    def tasks(self) -> list[TaskStatus]:
        return self.detail.tasks

    def __repr__(self) -> str:
        d = self.detail
        sub = f" ({d.sub_state})" if d.sub_state else ""
        return f"<Job {d.id} {d.state.value}{sub}: VC {d.virtual_cluster}, {d.total_gpu_number} GPU(s), {d.total_task_number} task(s)>"

    # -- blocking --------------------------------------------------------------------------

    def refresh(self) -> JobDetail:
        """Read the job again; returns (and keeps) its detail."""
        return self.client._run(self._refresh())

    def wait(self, timeout: float | None = None, *, check: bool = False) -> JobDetail:
        """Block until the job has ended (SUCCEEDED, FAILED or STOPPED) and return its
        detail; ``TimeoutError`` after ``timeout`` seconds. Ctrl-C stops waiting, not the
        job. ``check=True``: raise :class:`~.outcome.JobFailed` unless it SUCCEEDED."""
        return self.client._run(self._wait(timeout, check))

    @overload
    def logs(
        self,
        role: str | None = ...,
        index: int = ...,
        *,
        follow: Literal[False] = ...,
        tail: int | None = ...,
        attempt: int | None = ...,
    ) -> str: ...

    @overload
    def logs(
        self,
        role: str | None = ...,
        index: int = ...,
        *,
        follow: Literal[True],
        tail: int | None = ...,
        attempt: int | None = ...,
    ) -> Iterator[str]: ...

    def logs(
        self,
        role: str | None = None,
        index: int = 0,
        *,
        follow: bool = False,
        tail: int | None = None,
        attempt: int | None = None,
    ) -> str | Iterator[str]:
        """A task's log (``role`` default: the first role; ``index`` its instance).

        ``follow=True`` returns an iterator of text pieces as the task writes them, which
        ends when the task ends; ``tail`` = only the last N lines; ``attempt`` = an earlier
        attempt's log (0 = the first)."""
        if follow:
            chunks = follow_task(self.client._connection, self.id, role, index, tail=tail)
            return decode(self.client._loop.iterate(chunks))
        query = LogQuery(role=role, index=index, tail=tail, attempt=attempt)
        return self.client._run(_read_all(self.client._connection.logs(self.id, query)))

    def output(self) -> Iterator[TaskLine]:
        """Every task's output as it is written, line by line, each labelled by its task
        (``line.role``, ``line.index``, ``line.task``), until every task has ended."""
        return self.client._loop.iterate(follow_job(self.client._connection, self.id))

    def stop(self) -> JobDetail:
        """Stop the job: every task gets SIGTERM (then SIGKILL after the grace period); it
        stays listed as STOPPED."""
        return self.client._run(self._stop())

    def events(self) -> list[JobEvent]:
        """Scheduling and runtime events, oldest first."""
        return self.client._run(self.client._connection.events(self.id))

    # -- async twins -----------------------------------------------------------------------

    async def refresh_async(self) -> JobDetail:
        return await self.client._loop.run_async(self._refresh())

    async def wait_async(self, timeout: float | None = None, *, check: bool = False) -> JobDetail:
        return await self.client._loop.run_async(self._wait(timeout, check))

    async def logs_async(
        self,
        role: str | None = None,
        index: int = 0,
        *,
        tail: int | None = None,
        attempt: int | None = None,
    ) -> str:
        query = LogQuery(role=role, index=index, tail=tail, attempt=attempt)
        return await self.client._loop.run_async(
            _read_all(self.client._connection.logs(self.id, query))
        )

    async def follow_logs_async(
        self, role: str | None = None, index: int = 0, *, tail: int | None = None
    ) -> AsyncIterator[str]:
        """``logs(follow=True)`` for a caller in an event loop: ``async for text in …``."""
        chunks = follow_task(self.client._connection, self.id, role, index, tail=tail)
        async for text in decode_async(self.client._loop.iterate_async(chunks)):
            yield text

    async def output_async(self) -> AsyncIterator[TaskLine]:
        """:meth:`output` for a caller in an event loop."""
        async for line in self.client._loop.iterate_async(
            follow_job(self.client._connection, self.id)
        ):
            yield line

    async def stop_async(self) -> JobDetail:
        return await self.client._loop.run_async(self._stop())

    async def events_async(self) -> list[JobEvent]:
        return await self.client._loop.run_async(self.client._connection.events(self.id))

    # -- on the client's loop ----------------------------------------------------------

    async def _refresh(self) -> JobDetail:
        self.detail = await self.client._connection.get_job(self.id)
        return self.detail

    async def _stop(self) -> JobDetail:
        self.detail = await self.client._connection.stop_job(self.id)
        return self.detail

    async def _wait(self, timeout: float | None, check: bool = False) -> JobDetail:
        deadline = None if timeout is None else time.monotonic() + timeout
        pause = FIRST_POLL
        while not (await self._refresh()).state.terminal:
            if deadline is not None and time.monotonic() >= deadline:
                raise TimeoutError(
                    f"job {self.id} still {self.detail.state.value} after {timeout} s"
                )
            left = MAX_POLL if deadline is None else max(0.0, deadline - time.monotonic())
            await asyncio.sleep(min(pause, left))
            pause = min(pause * 1.5, MAX_POLL)
        if check and self.detail.state is not JobState.SUCCEEDED:
            raise await self._failure()
        return self.detail

    async def _failure(self) -> JobFailed:
        """The ended job's outcome with each failed task's last lines."""
        tasks = []
        for role, index, code, reason in failed_tasks(self.detail):
            query = LogQuery(role=role, index=index, tail=TAIL_LINES)
            text = await _read_all(self.client._connection.logs(self.id, query))
            tasks.append(FailedTask(f"{role}-{index}", code, reason, text.splitlines()))
        return JobFailed(self.detail, tasks)


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
        """The backend, its flavour, version, user and namespace."""
        return self._run(self._connection.info())

    def submit(
        self,
        spec: Spec,
        params: Mapping[str, Any] | None = None,
        *,
        vc: str | None = None,
        name: str | None = None,
    ) -> Job:
        """Submit a job: a job file's path, YAML or JSON text, the document as a dict, or a
        ``JobProtocol``; OpenPAI protocol v2, the short form or OpenPAI v1 JSON.

        ``params`` set the job's ``parameters`` (``<% $parameters.k %>`` in commands), as
        ``jupyter pai submit --param k=v`` does; ``vc`` and ``name`` override the job's.
        Warnings about what was not taken as written are issued as
        :class:`SubmissionWarning` and kept in ``job.warnings``.
        """
        return self._job(self._run(self._submit(spec, params, vc, name)))

    def submit_notebook(
        self,
        path: str | os.PathLike[str],
        params: Mapping[str, Any] | None = None,
        *,
        gpus: int = 0,
        vc: str | None = None,
        image: str | None = None,
        name: str | None = None,
        storage: str | None = None,
    ) -> Job:
        """Run a notebook as a job, ``params`` injected as papermill does; the executed
        notebook (outputs and errors included) is written beside it as ``<job name>.ipynb``
        (``job.executed_notebook``), or into ``storage`` (``NAME[/folder]``). ``path`` is
        on this machine, or in the server's tree for ``Client(url=…)``."""
        request = NotebookJobRequest(
            path=os.fspath(path),
            params={str(k): str(v) for k, v in (params or {}).items()},
            gpus=gpus,
            vc=vc,
            image=image,
            name=name,
            storage=storage,
        )
        result = self._run(self._connection.submit_notebook(request))
        job = self._job(SubmitResult(job=result.job, warnings=result.warnings))
        job.executed_notebook = result.output
        return job

    def jobs(
        self,
        *,
        state: str | JobState | Iterable[str | JobState] | None = None,
        vc: str | None = None,
        user: str | None = None,
        keyword: str | None = None,
    ) -> list[JobSummary]:
        """Jobs, newest first; ``state`` one state or several (``"RUNNING"``,
        ``["WAITING", "RUNNING"]``), ``keyword`` matched against names and ids."""
        result: list[JobSummary] = self._run(
            self._connection.list_jobs(_filter(state, vc, user, keyword))
        )
        return result

    def job(self, job_id: str) -> Job:
        """The job with this id (``NotFound`` if there is none)."""
        return Job(self, self._run(self._connection.get_job(job_id)))

    def vcs(self) -> list[VirtualCluster]:
        """Virtual clusters: capacity, use, free GPUs and queue."""
        return self._run(self._connection.virtual_clusters())

    def images(self) -> list[Image]:
        """The image catalogue (``PAIConfig.images``)."""
        return self._run(self._connection.images())

    @overload
    def storage(self, name: None = None, path: str = "") -> list[Storage]: ...

    @overload
    def storage(self, name: str, path: str = "") -> StorageListing | bytes: ...

    def storage(
        self, name: str | None = None, path: str = ""
    ) -> list[Storage] | StorageListing | bytes:
        """``storage()``: the storages jobs may mount; ``storage(name, path)``: a folder's
        listing, or a file's bytes."""
        return self._run(self._storage(name, path))

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
        self,
        spec: Spec,
        params: Mapping[str, Any] | None = None,
        *,
        vc: str | None = None,
        name: str | None = None,
    ) -> Job:
        return self._job(await self._loop.run_async(self._submit(spec, params, vc, name)))

    async def jobs_async(
        self,
        *,
        state: str | JobState | Iterable[str | JobState] | None = None,
        vc: str | None = None,
        user: str | None = None,
        keyword: str | None = None,
    ) -> list[JobSummary]:
        query = _filter(state, vc, user, keyword)
        return await self._loop.run_async(self._connection.list_jobs(query))

    async def job_async(self, job_id: str) -> Job:
        return Job(self, await self._loop.run_async(self._connection.get_job(job_id)))

    async def vcs_async(self) -> list[VirtualCluster]:
        return await self._loop.run_async(self._connection.virtual_clusters())

    async def images_async(self) -> list[Image]:
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
        vc: str | None,
        name: str | None,
    ) -> SubmitResult:
        if isinstance(spec, (str, os.PathLike)) and os.fspath(spec).endswith(".ipynb"):
            raise SpecError(
                [FieldError("file", "a notebook runs with submit_notebook(path, params, gpus=…)")]
            )
        source = await asyncio.to_thread(job_source, spec)
        parameters = {str(k): v for k, v in (params or {}).items()}
        return await self._connection.submit(
            source, parameters=parameters, virtual_cluster=vc, name=name
        )

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
    state: str | JobState | Iterable[str | JobState] | None,
    vc: str | None,
    user: str | None,
    keyword: str | None,
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


async def _read_all(chunks: AsyncIterator[bytes]) -> str:
    return b"".join([c async for c in chunks]).decode("utf-8", errors="replace")
