"""``GET nodes`` on the local backend: this machine, its 4 simulated GPU slots, and what
a running 2-GPU job requests of them, and the machine's measured use."""

from __future__ import annotations

import os

from .pai import PAIClient, job_spec, wait_for_file


async def test_this_machine_with_a_running_job(pai: PAIClient) -> None:
    [idle] = await pai.items("nodes")
    assert (idle["gpuTotal"], idle["gpuUsed"], idle["gpuFree"], idle["jobs"]) == (4, 0, 4, [])
    assert idle["cpuAllocatable"] == os.cpu_count() and idle["memoryMBAllocatable"] > 0
    # Measured use of this machine; simulated slots are not measured (null, not 0).
    assert 0 < idle["memoryPercent"] < 100 and idle["utilisationNote"] is None
    assert idle["gpuPercent"] is None

    spec = job_spec("hw", {"w": {"gpu": 2, "commands": [wait_for_file("go")]}})
    job = await pai.submit(spec)
    await pai.wait_state(job["id"], "RUNNING")

    async def started() -> dict[str, object] | None:
        [node] = await pai.items("nodes")
        return node if node["cpuRequested"] == 1 else None

    node = await pai.wait_for(started, "the task to be counted")
    assert (node["gpuUsed"], node["gpuFree"], node["jobs"]) == (2, 2, [job["id"]])
    assert node["memoryMBRequested"] == 256
    pai.release("go")
    await pai.wait_state(job["id"], "SUCCEEDED")
    [after] = await pai.items("nodes")
    assert (after["gpuUsed"], after["jobs"]) == (0, [])
