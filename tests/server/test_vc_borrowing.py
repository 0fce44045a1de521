"""Virtual clusters that lend idle GPUs and take them back (OpenPAI's VC semantics) on the
local backend: 4 GPU slots, VCs ``a`` and ``b`` guaranteed 2 each, ``a`` may borrow.

A 4-GPU job of ``a`` runs on ``b``'s idle share; when ``b`` submits, ``a``'s job is preempted
(not failed), requeued with the reason in words and its attempt's logs kept; ``b``'s job
runs; when it ends, ``a``'s job runs again and succeeds. Through the REST API with a
server, and through the CLI alone with no server running.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from .pai import PAIClient, job_spec, wait_for_file

VCS = {"a": {"share": 2, "borrow": True}, "b": 2}
RECLAIM_WITHIN = 30  # seconds from b's submission to b's job running


@pytest.fixture
def pai_extra_config() -> dict[str, Any]:
    return {"LocalBackend": {"virtual_clusters_config": VCS, "stop_grace_seconds": 2}}


def big_job() -> dict[str, Any]:
    return job_spec(
        "big",
        {
            "worker": {
                "instances": 2,
                "gpu": 2,
                "commands": ["echo big ran on $CUDA_VISIBLE_DEVICES", wait_for_file("go-big", 120)],
            }
        },
        defaults={"virtualCluster": "a"},
        jobRetryCount=0,
    )


def owner_job() -> dict[str, Any]:
    return job_spec(
        "mine",
        {"worker": {"gpu": 2, "commands": ["echo mine ran", wait_for_file("go-mine")]}},
        defaults={"virtualCluster": "b"},
    )


async def vcs(pai: PAIClient) -> dict[str, dict[str, Any]]:
    return {vc["name"]: vc for vc in await pai.items("virtual-clusters")}


def gpu_view(vc: dict[str, Any]) -> tuple[int, int, int, int, int]:
    return (
        vc["guaranteedGpus"],
        vc["used"]["gpu"],
        vc["borrowedGpus"],
        vc["lentGpus"],
        vc["free"]["gpu"],
    )


async def test_borrowed_gpus_are_reclaimed_by_preemption_and_the_borrower_runs_again(
    pai: PAIClient,
) -> None:
    before = await vcs(pai)
    assert before["a"]["capacity"]["gpu"] == 4 and before["a"]["mayBorrow"] is True
    assert before["b"]["capacity"]["gpu"] == 2 and before["b"]["mayLend"] is True
    assert gpu_view(before["a"]) == (2, 0, 0, 0, 4)
    assert gpu_view(before["b"]) == (2, 0, 0, 0, 2)

    big = await pai.submit(big_job())
    await pai.wait_state(big["id"], "RUNNING")
    await pai.wait_log(big["id"], "big ran", "worker", 0)
    borrowing = await vcs(pai)
    assert gpu_view(borrowing["a"]) == (2, 4, 2, 0, 0)
    assert gpu_view(borrowing["b"]) == (2, 0, 0, 2, 0)

    submitted = time.monotonic()
    mine = await pai.submit(owner_job())
    assert mine["state"] == "WAITING"
    assert "lent to other VCs to come back to VC b" in mine["waitingReason"], mine
    assert big["id"] in mine["waitingReason"]
    await pai.wait_state(mine["id"], "RUNNING", timeout=RECLAIM_WITHIN)
    took = time.monotonic() - submitted
    print(f"\nb's job RUNNING {took:.2f} s after its submission (a's job preempted)")
    assert took < RECLAIM_WITHIN

    preempted = await pai.job(big["id"])
    assert preempted["state"] == "WAITING", preempted
    assert preempted["waitingReason"].startswith("preempted: VC b reclaimed 2 GPUs"), preempted
    assert preempted["retries"] == 0  # not a failure: jobRetryCount is untouched
    assert all(t["state"] == "WAITING" and not t["gpus"] for t in preempted["tasks"])
    reasons = [e["reason"] for e in await pai.events(big["id"])]
    assert "Preempting" in reasons and "Preempted" in reasons
    assert "Failed" not in reasons and "JobRetry" not in reasons
    for index in (0, 1):
        earlier = await pai.log(big["id"], "worker", index, attempt=0)
        assert "big ran on" in earlier
    reclaimed = await vcs(pai)
    assert gpu_view(reclaimed["b"]) == (2, 2, 0, 0, 0)
    assert gpu_view(reclaimed["a"])[:4] == (2, 0, 0, 0)
    assert reclaimed["a"]["queuedJobs"] == 1

    pai.release("go-mine")
    pai.release("go-big")
    await pai.wait_state(mine["id"], "SUCCEEDED")
    done = await pai.wait_state(big["id"], "SUCCEEDED", timeout=60)
    assert done["waitingReason"] is None and done["retries"] == 0
    assert "big ran on" in await pai.log(big["id"], "worker", 0)
    events = await pai.events(big["id"])
    assert [e["reason"] for e in events].count("Scheduled") == 2
    assert any(e["reason"] == "Started" and "attempt 2" in e["message"] for e in events)


async def test_a_vc_that_may_not_borrow_is_refused_a_job_beyond_its_share(pai: PAIClient) -> None:
    spec = owner_job()
    spec["taskRoles"]["worker"]["resourcePerInstance"]["gpu"] = 3
    r = await pai.post_job(spec)
    assert r.code == 400 and "VC b has only 2" in r.json()["errors"][0]["message"], r
    spec = big_job()
    spec["taskRoles"]["worker"]["instances"] = 3
    r = await pai.post_job(spec)
    assert r.code == 400
    assert "VC a can use at most 4 (2 guaranteed, the rest borrowed)" in r.text


# -- the same with the CLI only: admission runs in whichever process changes something ------


@pytest.fixture
def cli(tmp_path: Path, pai_state_dir: Path):
    config = tmp_path / "config"
    config.mkdir()
    (config / "jupyter_pai_config.json").write_text(
        json.dumps({"LocalBackend": {"virtual_clusters_config": VCS, "stop_grace_seconds": 2}})
    )
    env = {
        **os.environ,
        "JUPYTER_PAI_BACKEND": "local",
        "JUPYTER_CONFIG_DIR": str(config),
    }

    def run(*args: str) -> Any:
        done = subprocess.run(
            [sys.executable, "-m", "jupyter_pai.cli", *args, "--json"],
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    return run


def wait_job(cli: Any, job_id: str, state: str, timeout: float = 30) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        job: dict[str, Any] = cli("show", job_id)
        if job["state"] == state:
            return job
        assert time.monotonic() < deadline, f"{job_id} never {state}: {job}"
        time.sleep(0.2)


def test_preemption_happens_with_no_server_running(cli: Any, tmp_path: Path) -> None:
    (tmp_path / "big.yaml").write_text(yaml.safe_dump(big_job()))
    (tmp_path / "mine.yaml").write_text(yaml.safe_dump(owner_job()))
    big = cli("submit", "big.yaml")
    wait_job(cli, big["id"], "RUNNING")
    submitted = time.monotonic()
    mine = cli("submit", "mine.yaml")
    assert mine["state"] == "WAITING"
    wait_job(cli, mine["id"], "RUNNING", timeout=RECLAIM_WITHIN)
    print(f"\nCLI only: b's job RUNNING {time.monotonic() - submitted:.2f} s after its submission")
    preempted = cli("show", big["id"])
    assert preempted["state"] == "WAITING"
    assert preempted["waitingReason"].startswith("preempted: VC b reclaimed 2 GPUs")
    (tmp_path / "go-mine").touch()
    (tmp_path / "go-big").touch()
    wait_job(cli, mine["id"], "SUCCEEDED")
    wait_job(cli, big["id"], "SUCCEEDED")
