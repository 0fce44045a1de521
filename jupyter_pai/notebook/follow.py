"""Following tasks' logs from before they start until they end, whatever the backend.

A log followed right after submission may not exist yet: the local backend waits for the
file, but on Kubernetes a pod that is not running has no log (an empty answer or 404).
So a follower waits until its task has left WAITING, and follows again if the stream ended
before the task did without sending anything. :func:`follow_job` merges every task's log
into lines labelled by task, in the order they arrive (``%%pai run``'s cell output)."""

from __future__ import annotations

import asyncio
import codecs
import contextlib
from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass

from ..backends.base import LogQuery
from ..backends.models import JobDetail, TaskState, TaskStatus
from ..errors import NotFound
from .connection import Connection

# Fast at first (a one-task cell's first line should show within half a second), then
# backing off: the local backend reads a file, Kubernetes its watch cache.
POLL_SECONDS = 0.02
MAX_POLL_SECONDS = 1.0


@dataclass(frozen=True)
class TaskLine:
    """One line a task wrote (without its newline)."""

    role: str
    index: int
    text: str

    @property
    def task(self) -> str:
        """``<role>-<index>``, as the panel and ``X-Task`` name a task."""
        return f"{self.role}-{self.index}"


def find_task(detail: JobDetail, role: str | None, index: int) -> TaskStatus:
    for task in detail.tasks:
        if (role is None or task.role == role) and task.index == index:
            return task
    raise NotFound(f"job {detail.id} has no task {role or '(first role)'}-{index}")


async def follow_task(
    conn: Connection, job_id: str, role: str | None, index: int, *, tail: int | None = None
) -> AsyncGenerator[bytes, None]:
    """The task's log as it is written, until the task (or the job) has ended."""
    pause = POLL_SECONDS
    detail = await conn.get_job(job_id)
    role = role or (detail.tasks[0].role if detail.tasks else None)
    while find_task(detail, role, index).state is TaskState.WAITING and not detail.state.terminal:
        await asyncio.sleep(pause)
        pause = min(pause * 1.5, MAX_POLL_SECONDS)
        detail = await conn.get_job(job_id)
    received = 0
    while True:
        query = LogQuery(role=role, index=index, follow=True, tail=tail)
        with contextlib.suppress(NotFound):  # a pod whose log the kubelet does not serve yet
            async for chunk in conn.logs(job_id, query):
                received += len(chunk)
                yield chunk
        if received:
            return
        detail = await conn.get_job(job_id)
        if find_task(detail, role, index).state.terminal or detail.state.terminal:
            # Ended before a follow could catch it: what it wrote is there to read now.
            with contextlib.suppress(NotFound):
                async for chunk in conn.logs(job_id, LogQuery(role=role, index=index, tail=tail)):
                    yield chunk
            return
        await asyncio.sleep(pause)
        pause = min(pause * 1.5, MAX_POLL_SECONDS)


async def follow_job(conn: Connection, job_id: str) -> AsyncIterator[TaskLine]:
    """Every task's log, line by line as the lines are completed, labelled by task."""
    detail = await conn.get_job(job_id)
    queue: asyncio.Queue[TaskLine | None] = asyncio.Queue()

    async def pump(role: str, index: int) -> None:
        pending = b""
        try:
            async for chunk in follow_task(conn, job_id, role, index):
                pending += chunk
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    await queue.put(TaskLine(role, index, line.decode("utf-8", "replace")))
            if pending:
                await queue.put(TaskLine(role, index, pending.decode("utf-8", "replace")))
        finally:
            await queue.put(None)

    pumps = [asyncio.create_task(pump(t.role, t.index)) for t in detail.tasks]
    try:
        running = len(pumps)
        while running:
            item = await queue.get()
            if item is None:
                running -= 1
            else:
                yield item
        for task in pumps:
            task.result()  # a follower's error is the caller's
    finally:
        for task in pumps:
            task.cancel()
        await asyncio.gather(*pumps, return_exceptions=True)


async def decode(chunks: AsyncGenerator[bytes, None]) -> AsyncIterator[str]:
    """Text from byte chunks, never splitting a UTF-8 character between two pieces;
    closing it closes ``chunks`` (a followed log's open stream)."""
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    async with contextlib.aclosing(chunks):
        async for chunk in chunks:
            text = decoder.decode(chunk)
            if text:
                yield text
    tail = decoder.decode(b"", final=True)
    if tail:
        yield tail
