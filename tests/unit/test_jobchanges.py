"""The change stream's hub (``backends.jobchanges``) over a stand-in backend: what it
tells listeners, when it lists, and that it stops when nobody listens."""

from __future__ import annotations

import asyncio
from datetime import datetime, timezone
from typing import Any

import pytest

from jupyter_pai.backends.jobchanges import JobChanges, diff
from jupyter_pai.backends.models import JobFilter, JobState, JobSummary
from jupyter_pai.errors import Unavailable


def summary(job_id: str, state: JobState = JobState.RUNNING, user: str = "mei") -> JobSummary:
    return JobSummary(
        id=job_id,
        name=job_id,
        user=user,
        state=state,
        virtual_cluster="default",
        submission_time=datetime(2026, 1, 1, tzinfo=timezone.utc),
    )


class FakeBackend:
    """Counts listings; ``version`` None means a backend that keeps no version."""

    def __init__(self, version: str | None = "1") -> None:
        self.jobs: dict[str, JobSummary] = {}
        self.version = version
        self.listings = 0
        self.failing = False

    async def jobs_version(self) -> str | None:
        return self.version

    async def list_jobs(self, query: Any = None) -> list[JobSummary]:
        if self.failing:
            raise Unavailable("cluster unreachable")
        self.listings += 1
        return list(self.jobs.values())


def hub_for(backend: FakeBackend, **kwargs: Any) -> JobChanges:
    async def get() -> Any:
        return backend

    return JobChanges(get, interval=0.01, **kwargs)


def test_diff_names_added_modified_and_deleted() -> None:
    before = {"a": summary("a"), "b": summary("b")}
    after = {"a": summary("a", JobState.SUCCEEDED), "c": summary("c")}
    assert [(c.type, c.job.id) for c in diff(before, after)] == [
        ("deleted", "b"),
        ("modified", "a"),
        ("added", "c"),
    ]
    assert diff(after, dict(after)) == []


async def test_lists_only_when_the_version_moves_and_filters_per_listener() -> None:
    backend = FakeBackend()
    backend.jobs["a"] = summary("a")
    hub = hub_for(backend)
    mine = await hub.subscribe(JobFilter(user="mei"))
    theirs = await hub.subscribe(JobFilter(user="tom"))
    listed = backend.listings
    await asyncio.sleep(0.1)
    assert backend.listings == listed  # the version did not move: no listing

    backend.jobs["b"] = summary("b")
    backend.jobs["a"] = summary("a", JobState.SUCCEEDED)
    backend.version = "2"
    first, second = await mine.get(), await mine.get()
    assert {(first.type, first.job.id), (second.type, second.job.id)} == {  # type: ignore[union-attr]
        ("modified", "a"),
        ("added", "b"),
    }
    assert theirs.queue.empty()
    mine.close()
    theirs.close()
    assert hub._task is None  # nobody listens: no more listing
    await hub.close()


async def test_a_backend_without_a_version_is_listed_each_interval() -> None:
    backend = FakeBackend(version=None)
    hub = hub_for(backend)
    sub = await hub.subscribe()
    backend.jobs["a"] = summary("a")
    change = await asyncio.wait_for(sub.get(), 5)
    assert change is not None and (change.type, change.job.id) == ("added", "a")
    assert backend.listings >= 2
    sub.close()
    await hub.close()


async def test_a_listener_that_falls_behind_is_told_to_start_over() -> None:
    backend = FakeBackend()
    hub = hub_for(backend, size=2)
    sub = await hub.subscribe()
    for i in range(5):
        backend.jobs[f"j{i}"] = summary(f"j{i}")
    backend.version = "2"
    await asyncio.sleep(0.1)
    got = [sub.queue.get_nowait() for _ in range(sub.queue.qsize())]
    assert got[-1] is None and len(got) <= 2  # a reset last; the rest dropped
    sub.close()
    await hub.close()


async def test_subscribing_while_the_backend_is_down_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import jupyter_pai.backends.jobchanges as module

    monkeypatch.setattr(module, "READY_SECONDS", 0.2)
    backend = FakeBackend()
    backend.failing = True
    hub = hub_for(backend)
    with pytest.raises(Unavailable):
        await hub.subscribe()
    assert hub._task is None
    await hub.close()
