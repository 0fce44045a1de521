"""A full disk under the local state directory (a small tmpfs): a submission is a clear 507
naming the state directory, with nothing half-made left; a running job keeps a whole
record and can still be stopped; once space is freed everything works again."""

from __future__ import annotations

import errno
import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from .conftest import GPU_SLOTS, REPO
from .pai import PAIClient, job_spec

SIZE = "4m"


@pytest.fixture
def pai_state_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The state directory on a tmpfs of its own (the machine runs tests as root)."""
    state = tmp_path / "pai-state"
    state.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={SIZE}", "tmpfs", str(state)],
        capture_output=True,
        text=True,
    )
    assert mounted.returncode == 0, f"cannot mount a tmpfs (tests run as root): {mounted.stderr}"
    monkeypatch.setenv("JUPYTER_PAI_STATE_DIR", str(state))
    monkeypatch.setenv("JUPYTER_PAI_LOCAL_GPUS", str(GPU_SLOTS))
    path = os.environ.get("PYTHONPATH", "")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in (str(REPO), path) if p))
    for name in ("JUPYTER_PAI_BACKEND", "JUPYTER_PAI_USER"):
        monkeypatch.delenv(name, raising=False)
    try:
        yield state
    finally:
        subprocess.run(["umount", "-l", str(state)], check=False)


def fill(folder: Path) -> Path:
    """A file taking every free byte of ``folder``'s file system."""
    filler = folder / "filler"
    with open(filler, "wb") as f:
        try:
            while True:
                f.write(b"\0" * 65536)
                f.flush()
        except OSError as error:
            assert error.errno == errno.ENOSPC, error
    return filler


def leftovers(state: Path) -> list[str]:
    """Half-made things: a job directory being made, a record being replaced."""
    jobs = state / "jobs"
    found = [p.name for p in jobs.iterdir() if p.name.startswith(".")] if jobs.exists() else []
    found += [str(p.relative_to(state)) for p in state.rglob(".job.json.*")]
    return found


def recorded_states(state: Path) -> list[str]:
    return [json.loads(p.read_bytes())["state"] for p in state.glob("jobs/*/job.json")]


async def test_a_full_state_disk_refuses_submission_and_keeps_records(
    pai: PAIClient, pai_state_dir: Path
) -> None:
    running = await pai.submit(job_spec("steady", {"w": {"commands": ["sleep 120"]}}))
    await pai.wait_state(running["id"], "RUNNING")
    filler = fill(pai_state_dir)
    try:
        r = await pai.post_job(job_spec("refused", {"w": {"commands": ["true"]}}))
        assert r.code == 507, r
        message = r.json()["message"]
        assert "state directory" in message and str(pai_state_dir) in message, message
        assert "full" in message, message
        assert leftovers(pai_state_dir) == []
        assert [j["name"] for j in await pai.jobs()] == ["steady"]
        # The running job's record is whole, and it can be stopped: a record rewritten in
        # place needs no more room than it had.
        assert recorded_states(pai_state_dir) == ["RUNNING"]
        assert (await pai.job(running["id"]))["state"] == "RUNNING"
    finally:
        filler.unlink()
    # Room again: submission works, and the first job still stops.
    again = await pai.submit(job_spec("again", {"w": {"commands": ["echo back"]}}))
    await pai.wait_state(again["id"], "SUCCEEDED")
    await pai.stop(running["id"])
    await pai.wait_state(running["id"], "STOPPED")
    assert leftovers(pai_state_dir) == []
