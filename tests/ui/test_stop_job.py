"""Stop a running job from the job list; the list then shows it STOPPED."""

from __future__ import annotations

import time

from playwright.sync_api import expect

from .conftest import Lab, job_row, open_panel, shot


def test_stop_running_job_from_list(page, jobs: Lab) -> None:
    name = f"ui-stop-{int(time.time())}"
    job = jobs.submit(name, "echo started; sleep 300", gpu=1)
    jobs.wait_state(job["id"], "RUNNING", timeout=30)

    open_panel(page, "jobs")
    row = job_row(page, name)
    state = row.locator(".jp-PAI-col-state")
    expect(state).to_have_text("RUNNING")
    row.get_by_role("button", name=f"Stop {name}").click()

    dialog = page.locator(".jp-Dialog")
    expect(dialog).to_contain_text(f"Stop {name}?")
    shot(page, "stop-job-1-confirm")
    dialog.get_by_role("button", name="Stop job").click()
    expect(dialog).to_have_count(0)

    expect(state).to_have_text("STOPPED", timeout=30_000)
    # A stopped job offers no stop button any more, only clone.
    expect(row.get_by_role("button", name=f"Stop {name}")).to_have_count(0)
    expect(row.get_by_role("button", name=f"Clone {name}")).to_be_visible()
    assert jobs.job(job["id"])["state"] == "STOPPED"
    shot(page, "stop-job-2-stopped")
