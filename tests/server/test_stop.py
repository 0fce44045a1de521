"""DELETE jobs/{id}: a running job is stopped (its processes are really gone), a waiting one
is stopped at once, and a stopped job stays listed."""

from __future__ import annotations

import time

from .pai import PY, PAIClient, job_spec, pid_alive, wait_for_file

# A task that ignores SIGTERM: only the SIGKILL after the grace period ends it.
STUBBORN = (
    f"{PY} -c 'import os, signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
    'open("stubborn.pid", "w").write(str(os.getpid())); time.sleep(300)\''
)
# A task that cleans up on SIGTERM (a checkpoint takes 0.5 s): the grace period lets it finish.
GRACEFUL = (
    f"{PY} -c 'import os, signal, sys, time\n"
    "def bye(*_):\n"
    "    time.sleep(0.5)\n"
    '    open("graceful.done", "w").write("checkpoint saved")\n'
    "    sys.exit(0)\n"
    "signal.signal(signal.SIGTERM, bye)\n"
    'open("graceful.pid", "w").write(str(os.getpid()))\n'
    "time.sleep(300)'"
)


async def test_stopping_a_running_job_kills_its_processes(pai: PAIClient) -> None:
    spec = job_spec(
        "to_stop",
        {
            "sleeper": {
                "gpu": 1,
                "commands": [
                    "echo $$ > shell.pid",
                    "sleep 300 & echo $! > sleep.pid; wait",
                ],
            },
            "stubborn": {"gpu": 1, "commands": [STUBBORN]},
            "graceful": {"commands": [GRACEFUL]},
        },
    )
    job_id = (await pai.submit(spec))["id"]
    await pai.wait_state(job_id, "RUNNING")

    async def pids_written() -> list[int] | None:
        files = [
            pai.root_dir / n for n in ("shell.pid", "sleep.pid", "stubborn.pid", "graceful.pid")
        ]
        if all(f.exists() and f.read_text().strip() for f in files):
            return [int(f.read_text()) for f in files]
        return None

    pids = await pai.wait_for(pids_written, "the tasks to write their pids", job_id=job_id)
    assert all(pid_alive(p) for p in pids)

    started = time.monotonic()
    stopping = await pai.stop(job_id)
    assert stopping["state"] == "STOPPING"
    # The stubborn task holds the job in STOPPING until the grace period (2 s) ends.
    assert (await pai.job(job_id))["state"] == "STOPPING"
    job = await pai.wait_state(job_id, "STOPPED", timeout=30)
    assert time.monotonic() - started >= 1.5  # SIGKILL came only after the grace period
    assert {t["state"] for t in job["tasks"]} == {"STOPPED"}
    assert job["completedTime"] is not None

    async def all_dead() -> bool:
        return not any(pid_alive(p) for p in pids)

    await pai.wait_for(all_dead, f"pids {pids} to end", timeout=10)
    # SIGTERM came first and the grace period let the task finish its cleanup.
    assert (pai.root_dir / "graceful.done").read_text() == "checkpoint saved"
    listed = {j["id"]: j for j in await pai.jobs()}
    assert listed[job_id]["state"] == "STOPPED"
    assert [j["id"] for j in await pai.jobs(state="STOPPED")] == [job_id]
    reasons = [e["reason"] for e in await pai.events(job_id)]
    assert "StopRequested" in reasons and reasons[-1] == "Stopped"
    # The freed GPUs are free again.
    (vc,) = await pai.items("virtual-clusters")
    assert vc["free"]["gpu"] == 4
    # Stopping again is harmless and keeps the state.
    assert (await pai.stop(job_id))["state"] == "STOPPED"


async def test_stopping_a_waiting_job_stops_it_at_once(pai: PAIClient) -> None:
    hog = await pai.submit(
        job_spec("hog", {"w": {"gpu": 4, "commands": [wait_for_file("go-hog")]}})
    )
    await pai.wait_state(hog["id"], "RUNNING")
    waiting = await pai.submit(job_spec("queued", {"w": {"gpu": 1, "commands": ["echo never"]}}))
    assert waiting["state"] == "WAITING"
    stopped = await pai.stop(waiting["id"])
    assert stopped["state"] == "STOPPED"
    assert stopped["waitingReason"] is None
    assert [t["state"] for t in stopped["tasks"]] == ["STOPPED"]
    pai.release("go-hog")
    await pai.wait_state(hog["id"], "SUCCEEDED")
    job = await pai.job(waiting["id"])
    assert job["state"] == "STOPPED" and job["launchedTime"] is None  # it never ran
    assert await pai.log(waiting["id"], "w", 0) == ""


async def test_stopping_an_unknown_job_is_404(pai: PAIClient) -> None:
    r = await pai.request("DELETE", "jobs", "nobody~nothing")
    assert r.code == 404
    body = r.json()
    assert "nothing" in body["message"] and body["errors"] == []
    r = await pai.request("GET", "jobs", "nobody~nothing")
    assert r.code == 404 and r.json()["message"]
    for sub in ("logs", "events"):
        r = await pai.request("GET", "jobs", "nobody~nothing", sub)
        assert r.code == 404 and r.json()["message"], sub
