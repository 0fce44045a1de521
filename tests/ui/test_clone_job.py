"""Clone a job from the job list; the launch form opens with the job's values
and a fresh name."""

from __future__ import annotations

import time

from playwright.sync_api import expect

from .conftest import Lab, job_row, open_panel, shot


def test_clone_fills_the_form(page, jobs: Lab) -> None:
    name = f"ui-clone-{int(time.time())}"
    command = 'echo "cloned $PAI_CURRENT_TASK_ROLE_CURRENT_TASK_INDEX"'
    job = jobs.submit(name, command, instances=3, gpu=1)
    jobs.wait_state(job["id"], "SUCCEEDED", timeout=30)

    open_panel(page, "jobs")
    job_row(page, name).get_by_role("button", name=f"Clone {name}").click()

    # The panel switches to the launch form, filled in from the job.
    expect(page.locator("#jp-PAI-tab-launch")).to_have_attribute("aria-selected", "true")
    form = page.locator(".jp-PAI-launch")
    expect(form.locator("[data-path='name'] input")).to_have_value(f"{name}-2")
    expect(form.locator("[data-path='defaults.virtualCluster'] select")).to_have_value("default")
    expect(form.locator("[data-path='taskRoles.worker'] input")).to_have_value("worker")
    expect(form.locator("[data-path='taskRoles.worker.instances'] input")).to_have_value("3")
    expect(
        form.locator("[data-path='taskRoles.worker.resourcePerInstance.gpu'] input")
    ).to_have_value("1")
    expect(form.locator("[data-path='taskRoles.worker.commands'] textarea")).to_have_value(command)
    expect(form.locator("#jp-PAI-image-uri")).to_have_value("python:3.11")
    shot(page, "clone-job-form")

    # The clone is a job of its own.
    form.locator(".jp-PAI-submit").click()
    expect(page.locator(".jp-PAI-detail-head h2")).to_have_text(f"{name}-2")
    clone = jobs.job_by_name(f"{name}-2")
    jobs.submitted.append(clone["id"])
    assert clone["totalTaskNumber"] == 3
