"""The state directory is the truth: what another process writes there is what the API shows,
and a job whose supervisor dies is ended and its GPUs given back."""

from __future__ import annotations

import asyncio
import json
import os
import signal
from pathlib import Path

import pytest

from jupyter_pai.backends.local import LocalBackend
from jupyter_pai.backends.local.jobviews import new_record
from jupyter_pai.backends.models import JobState
from jupyter_pai.spec import parse_job

from .pai import PAIClient, job_spec, pid_alive, wait_for_file


async def test_a_record_rewritten_within_one_clock_tick_is_not_served_stale(tmp_path: Path) -> None:
    """File times have a coarse resolution (a few ms): two writes of job.json in one tick
    carry the same mtime, and the second must still be seen."""
    backend = LocalBackend(state_dir=str(tmp_path / "state"), gpu_slots=0, housekeeping=0)
    job = parse_job({"name": "tick", "command": "true"}).job
    rec = new_record(job, "u", str(tmp_path))
    backend.store.create_job(rec, job.model_dump(mode="json", by_alias=True))
    path = backend.store.job_dir(rec.id) / "job.json"
    assert (await backend.get_job(rec.id)).state == JobState.WAITING
    stamp = path.stat().st_mtime_ns

    rec.state = JobState.RUNNING
    backend.store.write_job(rec)
    os.utime(path, ns=(stamp, stamp))  # the same tick as the first write
    assert (await backend.get_job(rec.id)).state == JobState.RUNNING
    assert [j.state for j in await backend.list_jobs()] == [JobState.RUNNING]


@pytest.fixture
def pai_extra_config() -> dict:
    return {"LocalBackend": {"housekeeping": 0.3}}


async def test_a_job_whose_supervisor_dies_fails_and_frees_its_gpus(pai: PAIClient) -> None:
    spec = job_spec(
        "orphan",
        {
            "w": {
                "instances": 2,
                "gpu": 2,
                "commands": [
                    "echo $$ > orphan-$PAI_CURRENT_TASK_ROLE_CURRENT_TASK_INDEX.pid",
                    "sleep 300",
                ],
            }
        },
    )
    job_id = (await pai.submit(spec))["id"]
    await pai.wait_state(job_id, "RUNNING")
    waiting = await pai.submit(job_spec("after", {"w": {"gpu": 1, "commands": ["echo after"]}}))
    assert waiting["state"] == "WAITING"

    async def pids() -> list[int] | None:
        files = [pai.root_dir / f"orphan-{i}.pid" for i in range(2)]
        if all(f.exists() and f.read_text().strip() for f in files):
            return [int(f.read_text()) for f in files]
        return None

    task_pids = await pai.wait_for(pids, "the tasks' pids", job_id=job_id)
    record = json.loads((pai.state_dir / "jobs" / job_id / "job.json").read_text())
    os.kill(record["supervisor_pid"], signal.SIGKILL)

    job = await pai.wait_state(job_id, "FAILED", timeout=30)
    assert job["subState"] == "supervisor lost"
    assert {t["state"] for t in job["tasks"]} == {"FAILED"}
    assert "SupervisorLost" in [e["reason"] for e in await pai.events(job_id)]

    async def tasks_gone() -> bool:
        return not any(pid_alive(p) for p in task_pids)

    await pai.wait_for(tasks_gone, "the orphaned tasks to be killed", timeout=10)
    await pai.wait_state(waiting["id"], "SUCCEEDED")


async def test_follow_a_waiting_job_until_it_has_run(pai: PAIClient) -> None:
    hog = await pai.submit(
        job_spec("hog", {"w": {"gpu": 4, "commands": [wait_for_file("go-hog")]}})
    )
    await pai.wait_state(hog["id"], "RUNNING")
    later = await pai.submit(job_spec("later", {"w": {"gpu": 1, "commands": ["echo ran later"]}}))
    assert later["state"] == "WAITING"
    received: list[bytes] = []
    stream = asyncio.ensure_future(
        pai.fetch(
            "pai",
            "api",
            "jobs",
            later["id"],
            "logs",
            params={"follow": "true"},
            streaming_callback=received.append,
            request_timeout=60,
        )
    )
    await asyncio.sleep(0.5)
    assert not stream.done() and received == []
    pai.release("go-hog")
    response = await asyncio.wait_for(stream, timeout=30)
    assert response.code == 200
    assert b"".join(received) == b"ran later\n"
    assert (await pai.job(later["id"]))["state"] == "SUCCEEDED"


async def test_job_list_filters(pai: PAIClient) -> None:
    ok = await pai.submit(job_spec("alpha_ok", {"w": {"commands": ["true"]}}))
    bad = await pai.submit(job_spec("beta_bad", {"w": {"commands": ["exit 1"]}}))
    await pai.wait_state(ok["id"], "SUCCEEDED")
    await pai.wait_state(bad["id"], "FAILED")
    names = lambda jobs: sorted(j["name"] for j in jobs)  # noqa: E731
    assert names(await pai.jobs()) == ["alpha_ok", "beta_bad"]
    assert names(await pai.jobs(state="FAILED")) == ["beta_bad"]
    assert names(await pai.jobs(state="succeeded,failed")) == ["alpha_ok", "beta_bad"]
    assert names(await pai.jobs(keyword="ALPHA")) == ["alpha_ok"]
    assert names(await pai.jobs(vc="default")) == ["alpha_ok", "beta_bad"]
    assert names(await pai.jobs(vc="other")) == []
    user = ok["user"]
    assert names(await pai.jobs(user=user)) == ["alpha_ok", "beta_bad"]
    assert names(await pai.jobs(user=user + "x")) == []
    # newest first
    assert [j["name"] for j in await pai.jobs()] == ["beta_bad", "alpha_ok"]
    r = await pai.request("GET", "jobs", params={"state": "SLEEPING"})
    assert r.code == 400 and r.json()["errors"][0]["path"] == "state"


@pytest.mark.parametrize("pai_extra_config", [{"LocalBackend": {"housekeeping": 0}}])
async def test_stopping_a_job_whose_supervisor_died_ends_it_at_once(pai: PAIClient) -> None:
    spec = job_spec(
        "headless", {"w": {"gpu": 1, "commands": ["echo $$ > headless.pid", "sleep 300"]}}
    )
    job_id = (await pai.submit(spec))["id"]
    await pai.wait_state(job_id, "RUNNING")

    async def task_pid() -> int | None:
        path = pai.root_dir / "headless.pid"
        return int(path.read_text()) if path.exists() and path.read_text().strip() else None

    pid = await pai.wait_for(task_pid, "the task's pid", job_id=job_id)
    record = json.loads((pai.state_dir / "jobs" / job_id / "job.json").read_text())
    supervisor = record["supervisor_pid"]
    os.kill(supervisor, signal.SIGKILL)

    # Dead, not dying: the task starts before its supervisor has imported everything, and
    # a process killed while it reads files from disk lingers a few ms on a loaded machine.
    async def supervisor_dead() -> bool:
        return not pid_alive(supervisor)

    await pai.wait_for(supervisor_dead, "the supervisor to die", timeout=5)
    # No scheduling pass runs by itself here (housekeeping off, as in the CLI): the stop must
    # notice the dead supervisor, kill the task and end the job.
    stopped = await pai.stop(job_id)
    job = (
        stopped
        if stopped["state"] == "STOPPED"
        else await pai.wait_state(job_id, "STOPPED", timeout=5)
    )
    assert {t["state"] for t in job["tasks"]} == {"STOPPED"}

    async def task_gone() -> bool:
        return not pid_alive(pid)

    await pai.wait_for(task_gone, "the task to be killed", timeout=5)
