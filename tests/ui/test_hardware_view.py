"""The cluster view's hardware section on the local backend: this machine's 4
GPU slots with a running 2-GPU job's share (coloured as half full), CPU and memory
requested and in use, and the job, which opens from there."""

from __future__ import annotations

import re
import time
from typing import Any

from playwright.sync_api import expect

from .conftest import Lab, open_panel, shot


def test_hardware_view_shows_this_machine_and_its_job(page: Any, jobs: Lab) -> None:
    # The view is on screen before the job starts: it must follow the job's start by
    # itself, well before its 10 s refresh (once it showed "0 used" while a job ran).
    open_panel(page, "cluster")
    node = page.locator(".jp-PAI-hw-node").first
    gpu = node.locator(".jp-PAI-hw-row[data-resource='GPU']")
    expect(gpu).to_contain_text("0 used · 4 free of 4")

    name = f"ui-hw-{int(time.time())}"
    job = jobs.submit(name, "sleep 300", gpu=2)
    jobs.wait_state(job["id"], "RUNNING", timeout=30)
    expect(gpu).to_contain_text("2 used · 2 free of 4", timeout=8000)
    expect(gpu.locator(".jp-PAI-hw-fill")).to_have_class("jp-PAI-hw-fill jp-PAI-hw-mid")
    expect(node.locator(".jp-PAI-hw-row[data-resource='CPU']")).to_contain_text("1 of ")
    # Measured use of this machine (psutil); simulated GPU slots have none to show.
    for measured in ("CPU use", "Memory use"):
        row = node.locator(f".jp-PAI-hw-row[data-resource='{measured}']")
        expect(row.locator(".jp-PAI-hw-text")).to_have_text(re.compile(r"^\d+(\.\d)? % in use$"))
    expect(node.locator(".jp-PAI-hw-row[data-resource='GPU use']")).to_have_count(0)
    shot(page, "hardware-view")

    node.get_by_role("button", name=job["id"]).click()
    expect(page.locator(".jp-PAI-detail-panel")).to_contain_text(name)
