"""Abnormal jobs in the cluster view (OpenPAI's rule; here its running-time threshold set
to 3 seconds): the user's own job is listed with its reason and Stop, another user's
without Stop, and a notification says the user's own job looks abnormal; Stop from the
list stops it and it leaves the list."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from jupyter_pai.backends.local.backend import LocalBackend
from jupyter_pai.spec import parse_job

from .conftest import Lab, open_panel, run_lab, shot

THREE_SECONDS_IN_DAYS = 3 / 86400


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    with run_lab(
        tmp_path_factory.mktemp("lab-abnormal"),
        env={"JUPYTER_PAI_LOCAL_GPUS": "4", "JUPYTER_PAI_BACKEND": "local"},
        args=[
            "--LocalBackend.stop_grace_seconds=2",
            f"--LocalBackend.abnormal_running_days={THREE_SECONDS_IN_DAYS}",
        ],
    ) as started:
        yield started


def in_thread(coro: Any) -> Any:
    """Run ``coro`` to its end on a loop of its own (sync Playwright holds this thread's)."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()


def bob_submits(state_dir: Path, root: Path, name: str) -> str:
    async def submit() -> str:
        bob = LocalBackend(user="bob", state_dir=str(state_dir), gpu_slots="4")
        await bob.start()
        try:
            spec = {
                "protocolVersion": 2,
                "name": name,
                "type": "job",
                "taskRoles": {
                    "w": {
                        "instances": 1,
                        "resourcePerInstance": {"cpu": 1, "memoryMB": 128, "gpu": 1},
                        "commands": ["sleep 600"],
                    }
                },
            }
            return (await bob.submit(parse_job(spec).job, working_dir=str(root))).id
        finally:
            await bob.close()

    return in_thread(submit())


def bob_stops(state_dir: Path, job_id: str) -> None:
    async def stop() -> None:
        bob = LocalBackend(user="bob", state_dir=str(state_dir), gpu_slots="4")
        await bob.start()
        try:
            await bob.stop_job(job_id)
        finally:
            await bob.close()

    in_thread(stop())


def test_abnormal_jobs_listed_notified_and_stopped(page: Any, jobs: Lab) -> None:
    name = f"ui-long-{int(time.time())}"
    mine = jobs.submit(name, "sleep 600", gpu=1)
    theirs = bob_submits(jobs.state_dir, jobs.root_dir, f"{name}-bob")
    try:
        jobs.wait_state(mine["id"], "RUNNING", timeout=30)
        jobs.wait_state(theirs, "RUNNING", timeout=30)
        time.sleep(3.5)  # past the threshold

        page.reload()  # the watcher's first look comes with the page
        page.wait_for_selector("#jp-main-dock-panel", state="attached")
        toast = page.locator(".Toastify__toast", has_text=f"Your job {name} looks abnormal")
        expect(toast).to_contain_text("seconds (over 3 seconds)")
        open_panel(page, "cluster")
        section = page.locator(".jp-PAI-abnormal-section")
        own = section.locator(f"li[data-job='{mine['id']}']")
        expect(own).to_contain_text("seconds (over 3 seconds)")
        expect(own.locator("button.jp-PAI-abnormal-stop")).to_have_text("Stop")
        other = section.locator(f"li[data-job='{theirs}']")
        expect(other).to_contain_text("bob")
        expect(other.locator("button.jp-PAI-abnormal-stop")).to_have_count(0)
        shot(page, "abnormal-jobs-0-listed")

        own.locator("button.jp-PAI-abnormal-stop").click()
        page.locator(".jp-Dialog").get_by_role("button", name="Stop job").click()
        jobs.wait_state(mine["id"], "STOPPED", timeout=30)
        expect(own).to_have_count(0, timeout=20_000)
        expect(other).to_have_count(1)
        shot(page, "abnormal-jobs-1-stopped")
    finally:
        bob_stops(jobs.state_dir, theirs)
