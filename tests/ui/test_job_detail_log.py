"""A job's detail tab: the tasks table, and a task's log that grows while it is
watched, jumps to its start and end, and is searched."""

from __future__ import annotations

import re
import time

from playwright.sync_api import expect

from .conftest import Lab, job_row, open_panel, shot

# 300 lines at once (more than the viewer puts in the DOM), then one line a second.
COMMAND = (
    'for i in $(seq 1 300); do echo "warmup line $i"; done; '
    "for i in $(seq 1 12); do "
    'echo "step $i of task $PAI_CURRENT_TASK_ROLE_CURRENT_TASK_INDEX"; sleep 1; done'
)


def newest_step(page) -> int:
    texts = page.locator(".jp-PAI-log .jp-PAI-log-line").all_inner_texts()
    steps = [int(m.group(1)) for t in texts if (m := re.match(r"step (\d+) of", t))]
    return max(steps, default=0)


def test_detail_tab_live_log_jump_search_and_tasks(page, jobs: Lab) -> None:
    name = f"ui-detail-{int(time.time())}"
    job = jobs.submit(name, COMMAND, instances=2)
    jobs.wait_state(job["id"], "RUNNING", timeout=30)

    open_panel(page, "jobs")
    job_row(page, name).locator(".jp-PAI-job-name").click()
    detail = page.locator(".jp-PAI-detail-panel")
    expect(detail.locator(".jp-PAI-detail-head h2")).to_have_text(name)

    # The tasks table: both workers, running, one log shown.
    tasks = detail.locator(".jp-PAI-tasks-table tbody tr")
    expect(tasks).to_have_count(2)
    expect(detail.locator("tr[data-task='worker-0']")).to_contain_text("RUNNING")
    expect(detail.locator("tr[data-task='worker-1']")).to_contain_text("RUNNING")
    expect(detail.locator("tr[data-task='worker-0'] button[aria-pressed='true']")).to_have_text(
        "Shown"
    )

    # Live output: a step line arrives that was not on screen before.
    log = detail.locator(".jp-PAI-log")
    lines = log.locator(".jp-PAI-log-line")
    expect(lines.filter(has_text=re.compile(r"^step \d+ of task 0$")).first).to_be_visible(
        timeout=20_000
    )
    before = newest_step(page)
    assert before < 12, "the job finished before its log was watched"
    arrived = lines.filter(has_text=f"step {before + 1} of task 0")
    expect(arrived).to_have_count(0)
    expect(arrived).to_be_visible(timeout=10_000)
    expect(log.locator(".jp-PAI-log-status")).to_contain_text("following")
    shot(page, "detail-log-1-live")

    # Start of the log: the first line shows and the newest is no longer rendered.
    log.get_by_role("button", name="Jump to the start of the log (Home)").click()
    expect(lines.filter(has_text=re.compile(r"^warmup line 1$"))).to_be_visible()
    expect(lines.filter(has_text=re.compile(r"^step \d+ of task 0$"))).to_have_count(0)
    expect(log.locator(".jp-PAI-log-status")).to_contain_text("End to follow")

    # End: back at the newest line, following again.
    log.get_by_role("button", name="Jump to the end and follow new output (End)").click()
    expect(log.locator(".jp-PAI-log-status")).to_contain_text("following")
    newest = newest_step(page)
    assert newest > before
    expect(lines.filter(has_text=f"step {newest} of task 0")).to_be_in_viewport()
    expect(lines.filter(has_text=re.compile(r"^warmup line 1$"))).to_have_count(0)
    shot(page, "detail-log-2-end")

    # Search: the match is scrolled to, marked, and counted.
    search = log.locator(".jp-PAI-log-search")
    search.fill("warmup line 150")
    search.press("Enter")
    current = log.locator(".jp-PAI-log-line.jp-mod-current")
    expect(current).to_have_text("warmup line 150")
    expect(current).to_be_in_viewport()
    expect(current.locator("mark")).to_have_text("warmup line 150")
    expect(log.locator(".jp-PAI-log-search-status")).to_have_text("1 line")
    shot(page, "detail-log-3-search")

    # The other task's log, from the tasks table.
    detail.locator("tr[data-task='worker-1']").get_by_role("button", name="Show log").click()
    expect(detail.locator(".jp-PAI-log-title")).to_have_text("Log of worker-1")
    expect(
        detail.locator(".jp-PAI-log-line", has_text=re.compile(r"^step \d+ of task 1$")).first
    ).to_be_visible(timeout=10_000)
    expect(detail.locator("tr[data-task='worker-1']")).to_have_class(re.compile("jp-mod-selected"))
    shot(page, "detail-log-4-tasks")
