"""``GET abnormal-jobs`` on the local backend with a running-time threshold of a second:
a job running longer is listed with its reason, one stopped or waiting is not, and a job
of another user is listed without the right to stop it."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from jupyter_pai.backends.local.backend import LocalBackend
from jupyter_pai.spec import parse_job

from .pai import PAIClient, job_spec, wait_for_file

SECOND_IN_DAYS = 1 / 86400


@pytest.fixture
def pai_extra_config() -> dict[str, Any]:
    return {"LocalBackend": {"abnormal_running_days": SECOND_IN_DAYS}}


async def test_long_running_jobs_are_listed_with_their_reason(
    pai: PAIClient, pai_state_dir: Path
) -> None:
    mine = await pai.submit(job_spec("long", {"w": {"commands": [wait_for_file("go")]}}))
    await pai.wait_state(mine["id"], "RUNNING")
    bob = LocalBackend(user="bob", state_dir=str(pai_state_dir))
    await bob.start()
    try:
        spec = job_spec("theirs", {"w": {"commands": [wait_for_file("go")]}})
        theirs = await bob.submit(parse_job(spec).job, working_dir=str(pai.root_dir))
        await pai.wait_state(theirs.id, "RUNNING")
        await asyncio.sleep(1.5)

        listed = {a["job"]["id"]: a for a in await pai.items("abnormal-jobs")}
        assert set(listed) == {mine["id"], theirs.id}, listed
        assert listed[mine["id"]]["mayStop"] is True
        assert listed[theirs.id]["mayStop"] is False
        assert listed[mine["id"]]["reasons"][0].startswith("running for ")
        assert listed[mine["id"]]["reasons"][0].endswith("seconds (over 1 seconds)")
        assert listed[mine["id"]]["gpuPercentLastHour"] is None  # no GPU: not measured

        await pai.stop(mine["id"])
        await pai.wait_state(mine["id"], "STOPPED")
        assert [a["job"]["id"] for a in await pai.items("abnormal-jobs")] == [theirs.id]
        await bob.stop_job(theirs.id)
    finally:
        await bob.close()
