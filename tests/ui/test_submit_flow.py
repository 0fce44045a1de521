"""Submit a 2-worker job through the launch form and follow it in the job list
from WAITING (all GPUs taken) through RUNNING to SUCCEEDED."""

from __future__ import annotations

import re
import time

from playwright.sync_api import expect

from .conftest import Lab, job_row, open_panel, shot

COMMAND = "for i in 1 2 3 4 5 6; do echo step $i; sleep 1; done"


def test_submit_two_workers_waiting_running_succeeded(page, jobs: Lab) -> None:
    # Take every GPU, so the new job must wait for them.
    blocker = jobs.submit(f"ui-blocker-{int(time.time())}", "sleep 300", gpu=4)
    jobs.wait_state(blocker["id"], "RUNNING", timeout=30)

    open_panel(page, "launch")
    form = page.locator(".jp-PAI-launch")
    name = f"ui-two-workers-{int(time.time())}"
    form.locator("[data-path='name'] input").fill(name)
    vc = form.locator("[data-path='defaults.virtualCluster'] select")
    vc.select_option("default")
    expect(vc).to_have_value("default")
    form.locator("[data-path='taskRoles.worker.instances'] input").fill("2")
    form.locator("[data-path='taskRoles.worker.resourcePerInstance.gpu'] input").fill("1")
    form.locator("[data-path='taskRoles.worker.commands'] textarea").fill(COMMAND)
    # The form tells before submitting that the job will queue.
    expect(form.locator(".jp-PAI-warning")).to_contain_text("will wait")
    form.locator(".jp-PAI-submit").click()

    # The detail tab of the new job opens; the job is recorded as the form described it.
    expect(page.locator(".jp-PAI-detail-head h2")).to_have_text(name)
    job = jobs.job_by_name(name)
    jobs.submitted.append(job["id"])
    assert job["virtualCluster"] == "default"
    assert job["totalTaskNumber"] == 2 and job["totalGpuNumber"] == 2

    open_panel(page, "jobs")
    row = job_row(page, name)
    state = row.locator(".jp-PAI-col-state")
    expect(state).to_have_text("WAITING")
    expect(row.locator("[data-label='tasks']")).to_have_text("2")
    shot(page, "submit-flow-1-waiting")

    jobs.stop(blocker["id"])
    expect(state).to_have_text("RUNNING", timeout=30_000)
    # Each worker shows its one GPU and which device the local backend pinned it to.
    detail = page.locator(".jp-PAI-detail-panel")
    for index in (0, 1):
        cell = detail.locator(f"tr[data-task='worker-{index}'] td.jp-PAI-gpus")
        expect(cell).to_have_text(re.compile(r"^1 \([0-3]\)$"))
    shot(page, "submit-flow-2-running")
    expect(state).to_have_text("SUCCEEDED", timeout=30_000)
    shot(page, "submit-flow-3-succeeded")
    expect(job_row(page, blocker["name"]).locator(".jp-PAI-col-state")).to_have_text("STOPPED")
