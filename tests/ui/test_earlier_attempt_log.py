"""A task's earlier attempts in the detail tab: a task that failed once and was retried
shows a button for attempt 0, whose log is the failed attempt's; "Show log" is the
current attempt's again."""

from __future__ import annotations

import time
from pathlib import Path

from playwright.sync_api import expect

from .conftest import Lab, job_row, open_panel, shot


def test_an_earlier_attempts_log_is_shown_from_the_tasks_table(
    page, jobs: Lab, tmp_path: Path
) -> None:
    marker = tmp_path / "tried"
    command = (
        f'if [ -e {marker} ]; then echo "second attempt"; '
        f'else touch {marker}; echo "first attempt"; exit 3; fi'
    )
    name = f"ui-attempts-{int(time.time())}"
    job = jobs.submit(name, command, task_retries=1)
    jobs.wait_state(job["id"], "SUCCEEDED", timeout=60)

    open_panel(page, "jobs")
    job_row(page, name).locator(".jp-PAI-job-name").click()
    detail = page.locator(".jp-PAI-detail-panel")
    row = detail.locator("tr[data-task='worker-0']")
    expect(row).to_contain_text("SUCCEEDED")
    log = detail.locator(".jp-PAI-log")
    lines = log.locator(".jp-PAI-log-line")
    expect(lines.filter(has_text="second attempt")).to_be_visible(timeout=10_000)
    expect(lines.filter(has_text="first attempt")).to_have_count(0)

    row.get_by_role("button", name="Log of attempt 0 of worker-0").click()
    expect(detail.locator(".jp-PAI-log-title")).to_have_text("Log of worker-0, attempt 0 (ended)")
    expect(lines.filter(has_text="first attempt")).to_be_visible(timeout=10_000)
    expect(lines.filter(has_text="second attempt")).to_have_count(0)
    expect(row.get_by_role("button", name="Log of attempt 0 of worker-0")).to_have_attribute(
        "aria-pressed", "true"
    )
    shot(page, "detail-earlier-attempt")

    row.get_by_role("button", name="Show log").click()
    expect(detail.locator(".jp-PAI-log-title")).to_have_text("Log of worker-0")
    expect(lines.filter(has_text="second attempt")).to_be_visible(timeout=10_000)
