"""The change stream's hub: one per server, shared by every open stream.

While anyone listens it watches the backend's job list: each ``interval`` it asks for the
backend's :meth:`~.base.Backend.jobs_version` (one ``stat`` locally, counters of the watch
cache on Kubernetes) and lists the jobs only when that moved (or always, for a backend that
keeps no version), then tells each listener what was added, modified or deleted. Clients
thus cost nothing per poll; the hub's one listing replaces theirs."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

from ..errors import Unavailable
from .base import Backend
from .models import JobChange, JobFilter, JobSummary

log = logging.getLogger(__name__)

#: How long a new listener waits for the first listing before it is refused (503).
READY_SECONDS = 30.0

#: What a listener receives: a change, or None when it fell too far behind (and must
#: list again).
Message = JobChange | None


class Subscription:
    """One listener's queue of changes, filtered by its ``JobFilter`` (user, vc, keyword)."""

    def __init__(self, hub: JobChanges, query: JobFilter | None, size: int) -> None:
        self.hub = hub
        self.query = query
        self.queue: asyncio.Queue[Message] = asyncio.Queue(maxsize=size)
        self.overflowed = False

    def offer(self, change: JobChange) -> None:
        if self.overflowed or (self.query is not None and not self.query.matches(change.job)):
            return
        try:
            self.queue.put_nowait(change)
        except asyncio.QueueFull:  # a stalled client: tell it to start over, drop the rest
            self.overflowed = True
            with contextlib.suppress(asyncio.QueueEmpty):
                self.queue.get_nowait()
            self.queue.put_nowait(None)

    async def get(self) -> Message:
        return await self.queue.get()

    def close(self) -> None:
        self.hub.unsubscribe(self)


class JobChanges:
    def __init__(
        self, backend: Callable[[], Awaitable[Backend]], interval: float = 1.0, size: int = 1000
    ) -> None:
        self._backend = backend
        self.interval = interval
        self.size = size
        self._subscribers: set[Subscription] = set()
        self._task: asyncio.Task[None] | None = None
        self._known: dict[str, JobSummary] | None = None
        self._version: str | None = None
        self.ready = asyncio.Event()  # set once the first listing is known

    async def subscribe(self, query: JobFilter | None = None) -> Subscription:
        """A new listener; returns once the hub knows the current list, so every change
        after the call reaches it."""
        sub = Subscription(self, query, self.size)
        self._subscribers.add(sub)
        if self._task is None or self._task.done():
            self._known, self._version = None, None
            self.ready.clear()
            self._task = asyncio.create_task(self._run())
        try:
            await asyncio.wait_for(self.ready.wait(), READY_SECONDS)
        except TimeoutError:
            self.unsubscribe(sub)
            raise Unavailable("the job list cannot be read now; try again later") from None
        return sub

    def unsubscribe(self, sub: Subscription) -> None:
        self._subscribers.discard(sub)
        if not self._subscribers and self._task is not None:
            self._task.cancel()  # nobody listens: stop listing
            self._task = None

    async def close(self) -> None:
        self._subscribers.clear()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def _run(self) -> None:
        while True:
            try:
                await self.poll()
            except asyncio.CancelledError:
                raise
            except Exception as error:  # the backend may be unreachable for a while
                log.warning("jupyter-pai: job change stream could not list jobs: %s", error)
            await asyncio.sleep(self.interval)

    async def poll(self) -> list[JobChange]:
        """Compare the list with the last one and tell every listener what changed."""
        backend = await self._backend()
        version = await backend.jobs_version()
        if version is not None and version == self._version and self._known is not None:
            return []
        jobs = {j.id: j for j in await backend.list_jobs()}
        changes = [] if self._known is None else diff(self._known, jobs)
        self._known, self._version = jobs, version
        self.ready.set()
        for change in changes:
            for sub in list(self._subscribers):
                sub.offer(change)
        return changes


def diff(before: dict[str, JobSummary], after: dict[str, JobSummary]) -> list[JobChange]:
    changes = [
        JobChange(type="deleted", job=job) for job_id, job in before.items() if job_id not in after
    ]
    for job_id, job in after.items():
        old = before.get(job_id)
        if old is None:
            changes.append(JobChange(type="added", job=job))
        elif old is not job and old != job:  # backends reuse unchanged summaries
            changes.append(JobChange(type="modified", job=job))
    return changes
