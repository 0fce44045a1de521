"""The local backend's job list after a change reads only the records the change journal
names (a line per write, by any process), in the order a full listing has; where the
journal cannot say (first look, rotation, a full disk's byte-less change) it reads all."""

from __future__ import annotations

import os
from pathlib import Path

from jupyter_pai.backends.local import store as store_module
from jupyter_pai.backends.local.jobviews import JobViews, new_record
from jupyter_pai.backends.local.store import StateStore
from jupyter_pai.backends.models import JobState
from jupyter_pai.spec import parse_job


def _make(store: StateStore, name: str) -> str:
    job = parse_job({"name": name, "command": "true"}).job
    rec = new_record(job, "u", "/tmp")
    store.create_job(rec, job.model_dump(mode="json", by_alias=True))
    return rec.id


def _fresh(root: Path) -> list[tuple[str, str]]:
    return [(j.id, j.state.value) for j in JobViews(StateStore(root)).listing()]


def test_a_change_reads_only_the_named_records(tmp_path: Path) -> None:
    store = StateStore(tmp_path)
    ids = [_make(store, f"j{i}") for i in range(5)]
    views = JobViews(store)
    assert [j.id for j in views.listing()] == ids[::-1]  # newest first

    reads: list[str] = []
    original = StateStore.read_job

    def counting(self: StateStore, job_id: str) -> object:
        reads.append(job_id)
        return original(self, job_id)

    other = StateStore(tmp_path)  # another process's store
    rec = other.read_job(ids[2])
    rec.state = JobState.RUNNING
    other.write_job(rec)
    new = _make(other, "later")
    other.delete_job(ids[0])
    StateStore.read_job = counting  # type: ignore[method-assign]
    try:
        listed = [(j.id, j.state.value) for j in views.listing()]
    finally:
        StateStore.read_job = original  # type: ignore[method-assign]
    assert sorted(reads) == sorted([ids[2], new])
    assert listed == _fresh(tmp_path)
    assert [i for i, _ in listed] == [new, *ids[:0:-1]]
    assert dict(listed)[ids[2]] == "RUNNING"


def test_what_the_journal_cannot_say_is_read_whole(tmp_path: Path) -> None:
    store = StateStore(tmp_path)
    ids = [_make(store, f"j{i}") for i in range(3)]
    views = JobViews(store)
    views.listing()
    # Rotation: a new, empty journal.
    store_module.write_atomic(tmp_path / "generation", "")
    rec = store.read_job(ids[1])
    rec.state = JobState.FAILED
    store.write_job(rec)
    assert [(j.id, j.state.value) for j in views.listing()] == _fresh(tmp_path)
    # A change that could write no line (a full disk) moves only the time.
    path = tmp_path / "jobs" / ids[0] / "job.json"
    text = path.read_text().replace('"WAITING"', '"RUNNING"')
    path.write_text(text)
    st = os.stat(tmp_path / "generation")
    os.utime(tmp_path / "generation", ns=(st.st_atime_ns, st.st_mtime_ns + 10_000_000))
    assert dict((j.id, j.state.value) for j in views.listing())[ids[0]] == "RUNNING"
