"""``jupyter_pai.Job``: a job as :class:`~jupyter_pai.Client` hands it back. Its I/O runs on
its client's loop (:mod:`.loop`), each blocking call with an ``*_async`` twin."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Coroutine, Iterable, Iterator
from typing import Any, Literal, Protocol, TypeVar, overload

from ..backends.base import LogQuery
from ..backends.models import FieldWarning, JobDetail, JobEvent, JobState, TaskStatus
from .connection import Connection
from .follow import TaskLine, decode, follow_job, follow_task
from .loop import LoopThread
from .outcome import TAIL_LINES, FailedTask, JobFailed, failed_tasks

T = TypeVar("T")


class JobOwner(Protocol):
    """What a Job uses of the :class:`~jupyter_pai.Client` that made it: its connection and
    its loop thread. A protocol, so that this module does not import the client's."""

    _connection: Connection
    _loop: LoopThread

    def _run(self, coro: Coroutine[Any, Any, T]) -> T: ...


#: How often :meth:`Job.wait` looks at the job (seconds; it backs off to ``MAX_POLL``).
FIRST_POLL = 0.1
MAX_POLL = 1.0


class Job:
    """A submitted job: what the backend said about it last, and what can be done with it.

    ``detail`` is the last :class:`~jupyter_pai.backends.models.JobDetail` read;
    :attr:`state` reads the job again unless it has already ended."""

    def __init__(
        self, client: JobOwner, detail: JobDetail, warnings: Iterable[FieldWarning] = ()
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
            return self.client._loop.iterate(decode(chunks))
        query = LogQuery(role=role, index=index, tail=tail, attempt=attempt)
        return self.client._run(read_all(self.client._connection.logs(self.id, query)))

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
            read_all(self.client._connection.logs(self.id, query))
        )

    async def follow_logs_async(
        self, role: str | None = None, index: int = 0, *, tail: int | None = None
    ) -> AsyncIterator[str]:
        """``logs(follow=True)`` for a caller in an event loop: ``async for text in …``."""
        chunks = follow_task(self.client._connection, self.id, role, index, tail=tail)
        async for text in self.client._loop.iterate_async(decode(chunks)):
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
            text = await read_all(self.client._connection.logs(self.id, query))
            tasks.append(FailedTask(f"{role}-{index}", code, reason, text.splitlines()))
        return JobFailed(self.detail, tasks)


async def read_all(chunks: AsyncIterator[bytes]) -> str:
    return b"".join([c async for c in chunks]).decode("utf-8", errors="replace")
