"""Gang admission through the REST API: a job that does not fit waits (and says why) until
the GPUs it needs are all free; the virtual-cluster view follows."""

from __future__ import annotations

import asyncio
import contextlib
from datetime import datetime

import pytest
import yaml

from .pai import PAIClient, job_spec, wait_for_file


def four_gpu_job(name: str, commands: list[str], instances: int = 4) -> dict:
    return job_spec(
        name, {"worker": {"instances": instances, "gpu": 4 // instances, "commands": commands}}
    )


async def test_second_four_gpu_job_waits_until_the_first_ends(pai: PAIClient) -> None:
    first = await pai.submit(four_gpu_job("first", [wait_for_file("release-first")]))
    await pai.wait_state(first["id"], "RUNNING")

    # Sample both jobs' states from one listing at a time for the whole test.
    samples: list[dict[str, str]] = []

    async def sample() -> None:
        while True:
            samples.append({j["name"]: j["state"] for j in await pai.jobs()})
            await asyncio.sleep(0.05)

    sampler = asyncio.create_task(sample())
    try:
        second = await pai.submit(four_gpu_job("second", ["echo second ran"], instances=2))
        assert second["state"] == "WAITING"
        reason = second["waitingReason"]
        assert "4 GPUs" in reason and "VC default" in reason and "0 free" in reason, reason
        events = await pai.events(second["id"])
        waiting = [e for e in events if e["reason"] == "Waiting"]
        assert waiting and "4 GPUs" in waiting[0]["message"], events
        listed = {j["id"]: j for j in await pai.jobs()}
        assert listed[second["id"]]["waitingReason"] == reason

        # It keeps waiting while the first runs (several scheduling passes happen meanwhile).
        await asyncio.sleep(0.5)
        assert (await pai.job(second["id"]))["state"] == "WAITING"

        pai.release("release-first")
        done_first = await pai.wait_state(first["id"], "SUCCEEDED")
        done_second = await pai.wait_state(second["id"], "SUCCEEDED")
    finally:
        sampler.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await sampler

    assert "second ran" in await pai.log(second["id"], "worker", 1)
    assert done_second["waitingReason"] is None
    assert sorted(g for t in done_second["tasks"] for g in t["gpus"]) == ["0", "1", "2", "3"]
    assert [e["reason"] for e in await pai.events(second["id"])].count("Scheduled") == 1
    started = datetime.fromisoformat(done_second["launchedTime"])
    assert started >= datetime.fromisoformat(done_first["completedTime"])
    assert len(samples) > 5
    both = [s for s in samples if s.get("first") == "RUNNING" and s.get("second") == "RUNNING"]
    assert not both, both
    assert any(s.get("second") == "WAITING" for s in samples)


async def test_stopping_the_running_job_lets_the_waiting_one_run(pai: PAIClient) -> None:
    first = await pai.submit(four_gpu_job("hog", ["sleep 120"], instances=1))
    await pai.wait_state(first["id"], "RUNNING")
    second = await pai.submit(four_gpu_job("next", ["echo next ran"]))
    assert second["state"] == "WAITING"
    stopped = await pai.stop(first["id"])
    assert stopped["state"] in ("STOPPING", "STOPPED")
    await pai.wait_state(first["id"], "STOPPED")
    await pai.wait_state(second["id"], "SUCCEEDED")


async def test_fifo_a_small_job_does_not_overtake_a_waiting_big_one(pai: PAIClient) -> None:
    running = await pai.submit(four_gpu_job("run3", [wait_for_file("release-run3")], instances=1))
    # 4 GPUs held: a 4-GPU job waits at the head of the queue, then a 1-GPU job behind it.
    await pai.wait_state(running["id"], "RUNNING")
    big = await pai.submit(four_gpu_job("big", [wait_for_file("release-big")], instances=1))
    small = await pai.submit(job_spec("small", {"worker": {"gpu": 1, "commands": ["true"]}}))
    assert big["state"] == "WAITING" and small["state"] == "WAITING"
    assert "queued behind" in small["waitingReason"] and big["id"] in small["waitingReason"]
    pai.release("release-run3")
    await pai.wait_state(running["id"], "SUCCEEDED")
    await pai.wait_state(big["id"], "RUNNING")
    assert (await pai.job(small["id"]))["state"] == "WAITING"
    pai.release("release-big")
    await pai.wait_state(small["id"], "SUCCEEDED")


async def test_virtual_clusters_show_used_free_and_queued_gpus(pai: PAIClient) -> None:
    (vc,) = await pai.items("virtual-clusters")
    assert vc["name"] == "default"
    assert vc["capacity"]["gpu"] == 4
    assert (vc["used"]["gpu"], vc["free"]["gpu"], vc["queuedJobs"], vc["runningJobs"]) == (
        0,
        4,
        0,
        0,
    )

    three = await pai.submit(
        job_spec(
            "three", {"worker": {"instances": 3, "gpu": 1, "commands": [wait_for_file("go-three")]}}
        )
    )
    await pai.wait_state(three["id"], "RUNNING")
    two = await pai.submit(
        job_spec("two", {"worker": {"instances": 1, "gpu": 2, "commands": ["true"]}})
    )
    assert two["state"] == "WAITING"
    (vc,) = await pai.items("virtual-clusters")
    assert vc["used"]["gpu"] == 3 and vc["free"]["gpu"] == 1
    assert vc["runningJobs"] == 1 and vc["queuedJobs"] == 1
    assert vc["queued"]["gpu"] == 2
    assert vc["used"]["cpu"] == 3 and vc["used"]["memoryMB"] == 3 * 256

    pai.release("go-three")
    await pai.wait_state(two["id"], "SUCCEEDED")
    await pai.wait_state(three["id"], "SUCCEEDED")
    (vc,) = await pai.items("virtual-clusters")
    assert (vc["used"]["gpu"], vc["free"]["gpu"], vc["queuedJobs"], vc["runningJobs"]) == (
        0,
        4,
        0,
        0,
    )


async def test_info_says_local_backend(pai: PAIClient) -> None:
    info = await pai.get("info")
    assert info["backend"] == "local"
    assert info["gpuSlots"] == 4
    assert info["user"] and info["version"]


async def test_images_default_catalogue(pai: PAIClient) -> None:
    images = (await pai.get("images"))["items"]  # the catalogue (registries beside it)
    names = [i["name"] for i in images]
    assert "pytorch-2.4" in names and "python-3.11" in names
    assert all(i["uri"] for i in images)
    assert next(i for i in images if i["name"] == "python-3.11")["gpu"] is False


CATALOGUE = [
    {"name": "mine", "uri": "registry.example/mine:1", "description": "my image"},
    {"name": "cpu", "uri": "python:3.12", "gpu": False},
]


@pytest.mark.parametrize("pai_extra_config", [{"PAIConfig": {"images": CATALOGUE}}])
async def test_images_configured_catalogue(pai: PAIClient) -> None:
    images = (await pai.get("images"))["items"]  # the catalogue (registries beside it)
    assert [(i["name"], i["uri"], i["gpu"]) for i in images] == [
        ("mine", "registry.example/mine:1", True),
        ("cpu", "python:3.12", False),
    ]
    assert images[0]["description"] == "my image"


TWO_VCS = {"LocalBackend": {"virtual_clusters_config": {"default": 2, "research": "50%"}}}


@pytest.mark.parametrize("pai_extra_config", [TWO_VCS])
async def test_virtual_clusters_are_queued_separately(pai: PAIClient) -> None:
    vcs = {vc["name"]: vc for vc in await pai.items("virtual-clusters")}
    assert {name: vc["capacity"]["gpu"] for name, vc in vcs.items()} == {
        "default": 2,
        "research": 2,
    }

    full = await pai.submit(
        job_spec("fills_default", {"w": {"gpu": 2, "commands": [wait_for_file("go-d")]}})
    )
    await pai.wait_state(full["id"], "RUNNING")
    blocked = await pai.submit(job_spec("blocked", {"w": {"gpu": 1, "commands": ["true"]}}))
    assert blocked["state"] == "WAITING"
    assert "waiting for 1 GPUs in VC default, 0 free" == blocked["waitingReason"]
    r = await pai.request(
        "POST",
        "jobs",
        params={"vc": "research"},
        headers={"Content-Type": "text/yaml"},
        body=yaml.safe_dump(
            job_spec("elsewhere", {"w": {"gpu": 2, "commands": [wait_for_file("go-r")]}})
        ),
    )
    assert r.code == 201, r
    elsewhere = r.json()["job"]
    assert elsewhere["virtualCluster"] == "research"
    job = await pai.wait_state(elsewhere["id"], "RUNNING")
    held = {g for t in (await pai.job(full["id"]))["tasks"] for g in t["gpus"]}
    assert held.isdisjoint(g for t in job["tasks"] for g in t["gpus"])

    vcs = {vc["name"]: vc for vc in await pai.items("virtual-clusters")}
    assert (vcs["default"]["used"]["gpu"], vcs["default"]["queuedJobs"]) == (2, 1)
    assert (vcs["research"]["used"]["gpu"], vcs["research"]["queuedJobs"]) == (2, 0)
    # A research job over its quota is refused at once.
    r = await pai.post_job(
        job_spec(
            "too_big",
            {"w": {"gpu": 3, "commands": ["true"]}},
            defaults={"virtualCluster": "research"},
        )
    )
    assert r.code == 400 and "only 2" in r.json()["errors"][0]["message"]
    assert [j["name"] for j in await pai.jobs(vc="research")] == ["elsewhere"]

    pai.release("go-d")
    pai.release("go-r")
    await pai.wait_state(blocked["id"], "SUCCEEDED")
    await pai.wait_state(elsewhere["id"], "SUCCEEDED")
