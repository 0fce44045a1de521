"""GPU utilisation over REST on the local backend of a machine without GPUs (simulated
slots): nothing is measured, and it says so — no zeros that would read as idle GPUs."""

from __future__ import annotations

from .pai import PAIClient, job_spec, wait_for_file


async def test_no_gpu_here_means_no_figures_and_a_note(pai: PAIClient) -> None:
    job = await pai.submit(job_spec("gpujob", {"w": {"gpu": 1, "commands": [wait_for_file("go")]}}))
    await pai.wait_state(job["id"], "RUNNING")
    util = await pai.get("jobs", job["id"], "utilisation")
    assert util["jobId"] == job["id"]
    assert util["current"] is None and util["lastHour"] is None, util
    assert util["source"] is None
    assert [(t["role"], t["index"], t["gpuNumber"]) for t in util["tasks"]] == [("w", 0, 1)]
    assert util["tasks"][0]["current"] is None and util["tasks"][0]["lastHour"] is None
    assert "NVML" in util["note"], util
    pai.release("go")

    missing = await pai.request("GET", "jobs", "root~nothing", "utilisation")
    assert missing.code == 404, missing
