"""A long-lived backend forks each job's supervisor from its warm launcher: the job runs as
one started afresh would, outlives the launcher, and a launcher that died or is not yet
ready never holds a job back (the supervisor then starts as a fresh Python)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
from pathlib import Path

import pytest

from jupyter_pai.backends.local import LocalBackend
from jupyter_pai.backends.models import JobDetail, JobState
from jupyter_pai.spec import parse_job
from jupyter_pai.spec.protocol import JobProtocol
from tests.planted import plant, ran


def _job(name: str, release: Path) -> JobProtocol:
    command = f"while [ ! -e {release} ]; do sleep 0.05; done; echo done"
    return parse_job({"name": name, "instances": 2, "command": command}).job


async def _wait(
    backend: LocalBackend, job_id: str, state: JobState, timeout: float = 30
) -> JobDetail:
    deadline = time.monotonic() + timeout
    while True:
        detail = await backend.get_job(job_id)
        if detail.state == state and (
            state != JobState.RUNNING or all(t.state == "RUNNING" for t in detail.tasks)
        ):
            return detail
        assert time.monotonic() < deadline, f"{job_id} is {detail.state}, not {state}"
        await asyncio.sleep(0.05)


def _supervisor(backend: LocalBackend, job_id: str) -> int:
    rec = json.loads((backend.store.job_dir(job_id) / "job.json").read_bytes())
    return int(rec["supervisor_pid"])


def _cmdline(pid: int) -> str:
    return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()


async def _launcher_ready(backend: LocalBackend) -> int:
    launcher = backend._launcher
    assert await asyncio.to_thread(launcher._ready.wait, 30), "the launcher never became ready"
    assert launcher._proc is not None
    return launcher._proc.pid


async def test_supervisors_fork_from_the_launcher_and_outlive_it(tmp_path: Path) -> None:
    release = tmp_path / "release"
    backend = LocalBackend(state_dir=str(tmp_path / "state"), gpu_slots=0)
    await backend.start()
    try:
        launcher = await _launcher_ready(backend)
        job_id = (await backend.submit(_job("forked", release))).id
        await _wait(backend, job_id, JobState.RUNNING)
        pid = _supervisor(backend, job_id)
        # A fork of the launcher (its program, not a fresh bootstrap), in a session of its own.
        assert "launcher import serve" in _cmdline(pid), _cmdline(pid)
        assert os.getsid(pid) == pid

        # The launcher dies (as with a killed server): the job goes on and ends as usual.
        os.kill(launcher, signal.SIGKILL)
        await asyncio.sleep(0.2)
        assert (await backend.get_job(job_id)).state == JobState.RUNNING

        # The next job does not wait for a launcher: its supervisor starts afresh.
        second = (await backend.submit(_job("afresh", release))).id
        await _wait(backend, second, JobState.RUNNING)
        assert "bootstrap import main" in _cmdline(_supervisor(backend, second))

        release.touch()
        for done in (job_id, second):
            detail = await _wait(backend, done, JobState.SUCCEEDED)
            assert [t.exit_code for t in detail.tasks] == [0, 0]
    finally:
        release.touch()
        await backend.close()


async def test_supervisors_import_nothing_from_the_servers_working_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The launcher and a supervisor started afresh are the server's own programs: a
    ``json.py`` (or a ``jupyter_pai``) in the folder the server was started in never runs
    in them, and the jobs run (their own commands, in their working folder, as ever)."""
    markers = plant(tmp_path / "work")
    monkeypatch.chdir(tmp_path / "work")
    backend = LocalBackend(state_dir=str(tmp_path / "state"), gpu_slots=0)
    await backend.start()
    outcomes: list[object] = []
    try:
        launcher = backend._launcher
        ready = await asyncio.to_thread(launcher._ready.wait, 15)
        forked = (await backend.submit(_job("forked", tmp_path / "go"))).id
        (tmp_path / "go").touch()
        outcomes += await asyncio.gather(
            _wait(backend, forked, JobState.SUCCEEDED, timeout=15), return_exceptions=True
        )
        if launcher._proc is not None:
            os.kill(launcher._proc.pid, signal.SIGKILL)  # the next one starts afresh
            await asyncio.to_thread(launcher._proc.wait)
        afresh = (await backend.submit(_job("afresh", tmp_path / "go"))).id
        outcomes += await asyncio.gather(
            _wait(backend, afresh, JobState.SUCCEEDED, timeout=15), return_exceptions=True
        )
    finally:
        await backend.close()
    assert not ran(markers), ran(markers)
    assert ready
    assert [getattr(o, "state", o) for o in outcomes] == [JobState.SUCCEEDED] * 2
