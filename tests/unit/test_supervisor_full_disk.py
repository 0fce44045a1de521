"""A job's supervisor on a full state disk goes on: started by its bootstrap (which
claimed the job in the same process), it writes nothing more to claim it, and an event
the disk has no room for is dropped. Either write failing would end the supervisor and
fail a running job."""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from jupyter_pai.backends.local.jobviews import new_record
from jupyter_pai.backends.local.processes import start_marker
from jupyter_pai.backends.local.store import StateStore
from jupyter_pai.backends.local.supervisor import Supervisor
from jupyter_pai.backends.models import JobState
from jupyter_pai.spec import parse_job


def running_job(store: StateStore, supervisor_pid: int | None) -> str:
    job = parse_job({"name": "steady", "command": "sleep 120"}).job
    rec = new_record(job, "u", "/tmp")
    rec.state = JobState.RUNNING
    if supervisor_pid is not None:
        rec.supervisor_pid = supervisor_pid
        rec.supervisor_start = start_marker(supervisor_pid)
    store.create_job(rec, job.model_dump(mode="json", by_alias=True))
    return rec.id


def refusing(code: int) -> Callable[..., None]:
    """A stand-in for a StateStore write that the file system refuses with ``code``."""

    def refused(self: StateStore, *args: object, **kwargs: object) -> None:
        raise OSError(code, os.strerror(code))

    return refused


def test_a_job_its_bootstrap_claimed_is_claimed_without_a_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = StateStore(tmp_path)
    job_id = running_job(store, os.getpid())
    monkeypatch.setattr(StateStore, "write_job", refusing(errno.ENOSPC))
    assert Supervisor(store, job_id)._claim()


def test_an_unclaimed_job_is_claimed_by_writing_its_record(tmp_path: Path) -> None:
    store = StateStore(tmp_path)
    job_id = running_job(store, None)
    assert Supervisor(store, job_id)._claim()
    rec = store.read_job(job_id)
    assert rec.supervisor_pid == os.getpid()
    assert rec.supervisor_start == start_marker(os.getpid())


def test_an_event_the_full_disk_refuses_is_dropped_and_the_supervisor_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = StateStore(tmp_path)
    job_id = running_job(store, os.getpid())
    monkeypatch.setattr(StateStore, "add_event", refusing(errno.ENOSPC))
    Supervisor(store, job_id).event("Started", "attempt 1: starting 1 task(s)")


def test_an_event_that_fails_otherwise_still_raises(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = StateStore(tmp_path)
    job_id = running_job(store, os.getpid())
    monkeypatch.setattr(StateStore, "add_event", refusing(errno.EACCES))
    with pytest.raises(PermissionError):
        Supervisor(store, job_id).event("Started", "attempt 1: starting 1 task(s)")
