"""The notebook widgets in JupyterLab: a notebook shows ``launcher()`` and ``monitor()``;
the launcher submits a job that must wait (another job holds every GPU until the test
stops it), and the monitor, updating by itself, shows it go WAITING → RUNNING →
SUCCEEDED; then a ``Job`` as a cell's result shows its live view."""

from __future__ import annotations

import json
import re
import time
from typing import Any

import pytest

from .conftest import Lab, shot

pytestmark = pytest.mark.ui

NOTEBOOK = {
    "cells": [
        {
            "cell_type": "code",
            "metadata": {},
            "execution_count": None,
            "outputs": [],
            "source": [
                "import jupyter_pai.widgets as pw\n",
                "from jupyter_pai import Client\n",
                "client = Client()\n",
                "pw.launcher(client)",
            ],
        },
        {
            "cell_type": "code",
            "metadata": {},
            "execution_count": None,
            "outputs": [],
            "source": ["pw.monitor(client)"],
        },
    ],
    "metadata": {
        "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}
    },
    "nbformat": 4,
    "nbformat_minor": 5,
}


def state_of(page: Any, job_id: str) -> str | None:
    badge = page.locator(f'.jp-pai-monitor .jp-pai-state[data-job-id="{job_id}"]')
    if badge.count() == 0:
        return None
    value: str | None = badge.first.get_attribute("data-state")
    return value


def wait_for_state(page: Any, job_id: str, state: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while state_of(page, job_id) != state:
        assert time.monotonic() < deadline, f"{job_id} never showed {state} in the monitor"
        page.wait_for_timeout(100)


def test_launcher_submits_and_monitor_follows_the_job(page: Any, jobs: Lab) -> None:
    (jobs.root_dir / "widgets.ipynb").write_text(json.dumps(NOTEBOOK))
    # Every GPU busy until the test stops this job: the widget's job has to wait for them.
    blocker = jobs.submit("widget-blocker", "sleep 300", instances=4, gpu=1)
    jobs.wait_state(blocker["id"], "RUNNING")

    page.goto(f"{jobs.url}lab/tree/widgets.ipynb?token={jobs.token}")
    page.locator(".jp-Notebook").wait_for()
    page.locator(".jp-StatusBar-TextItem", has_text="| Idle").wait_for(timeout=60_000)
    page.locator(".lm-MenuBar-item", has_text=re.compile("^Run$")).click()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile("^Run All Cells$")).click()
    launcher = page.locator(".jp-pai-launcher")
    launcher.wait_for(timeout=60_000)
    page.locator(".jp-pai-monitor").wait_for(timeout=60_000)
    vc_text = launcher.locator(".jp-pai-launcher-vc select").inner_text().replace("\xa0", " ")
    assert vc_text == "default — 0 of 4 GPUs free"  # the blocker holds them all

    launcher.locator(".jp-pai-launcher-gpus input").fill("2")
    launcher.locator(".jp-pai-launcher-gpus input").press("Enter")
    launcher.locator(".jp-pai-launcher-name input").fill("from-widget")
    launcher.locator(".jp-pai-launcher-command textarea").fill(
        'echo "hello from the launcher widget"\nsleep 3'
    )
    launcher.locator(".jp-pai-launcher-command textarea").blur()
    launcher.locator(".jp-pai-launcher-button").click()
    status = launcher.locator(".jp-pai-submitted")
    status.wait_for()
    job_id = status.locator("b").inner_text()
    assert job_id.endswith("~from-widget")
    jobs.submitted.append(job_id)
    detail = jobs.job(job_id)
    assert detail["spec"]["taskRoles"]["worker"]["resourcePerInstance"]["gpu"] == 2

    wait_for_state(page, job_id, "WAITING", timeout=15)
    page.locator(".jp-pai-monitor .jp-pai-job-name", has_text="from-widget").click()
    shot(page, "widgets-monitor-waiting")
    jobs.stop(blocker["id"])  # its GPUs free up: the widget's job starts
    wait_for_state(page, job_id, "RUNNING")
    shot(page, "widgets-monitor-running")
    wait_for_state(page, job_id, "SUCCEEDED")
    log = page.locator(".jp-pai-monitor .jp-pai-log")
    page.wait_for_function(
        "el => el.textContent.includes('hello from the launcher widget')",
        arg=log.element_handle(),
    )
    shot(page, "widgets-monitor-succeeded")
    assert jobs.job(job_id)["state"] == "SUCCEEDED"

    # A Job as a cell's result shows itself as a live view: header, tasks, log tail.
    page.locator(".jp-Notebook .jp-Cell").last.click()
    page.keyboard.press("Escape")
    page.keyboard.press("b")  # a new cell below, then into its editor
    page.keyboard.press("Enter")
    page.keyboard.type(f'client.job("{job_id}")')
    page.keyboard.press("Shift+Enter")
    view = page.locator(".jp-pai-jobview")
    view.wait_for(timeout=60_000)
    assert view.locator(f'.jp-pai-state[data-job-id="{job_id}"]').get_attribute("data-state") == (
        "SUCCEEDED"
    )
    page.wait_for_function(
        "el => el.textContent.includes('hello from the launcher widget')",
        arg=view.locator(".jp-pai-log").element_handle(),
    )
    view.scroll_into_view_if_needed()
    shot(page, "widgets-job-view")
