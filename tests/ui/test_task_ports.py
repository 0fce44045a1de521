"""A task's web ports open in JupyterLab tabs through the server's proxy: a running task
that serves HTTP on a port labelled ``tensorboard`` gets "Open TensorBoard" in the job
detail's tasks table, another labelled port its own button; each opens a tab whose frame
shows the task's page (local backend)."""

from __future__ import annotations

import json
import time
from typing import Any

from playwright.sync_api import expect

from tests import taskweb

from .conftest import Lab, job_row, open_panel, shot


def test_open_tensorboard_and_a_labelled_port_in_tabs(page: Any, jobs: Lab) -> None:
    name = f"ui-ports-{int(time.time())}"
    spec = {
        "protocolVersion": 2,
        "name": name,
        "type": "job",
        "prerequisites": [{"name": "img", "type": "dockerimage", "uri": "python:3.11"}],
        "taskRoles": {
            "trainer": {
                "instances": 1,
                "dockerImage": "img",
                "resourcePerInstance": {
                    "cpu": 1,
                    "memoryMB": 256,
                    "gpu": 0,
                    "ports": {"tensorboard": 1, "dash": 1},
                },
                # The same app on both ports: TensorBoard's stand-in and a labelled web UI.
                "commands": [
                    f"{taskweb.command('python3', 'dash')} & {taskweb.command('python3')}"
                ],
            }
        },
    }
    job = jobs.json("jobs", method="POST", body=json.dumps(spec).encode())["job"]
    jobs.submitted.append(job["id"])
    running = jobs.wait_state(job["id"], "RUNNING", timeout=30)
    deadline = time.monotonic() + 30
    log = ""
    while log.count("serving on port") < 2:  # both apps listen
        assert time.monotonic() < deadline, f"the task's web apps never started: {log}"
        time.sleep(0.3)
        log = jobs.api(f"jobs/{job['id']}/logs?role=trainer").decode()
    ports = running["tasks"][0]["ports"]

    open_panel(page, "jobs")
    job_row(page, name).locator(".jp-PAI-job-name").click()
    detail = page.locator(".jp-PAI-detail-panel")
    row = detail.locator("tr[data-task='trainer-0']")
    board = row.locator("button.jp-PAI-port-open[data-label='tensorboard']")
    expect(board).to_have_text("Open TensorBoard")
    dash = row.locator("button.jp-PAI-port-open[data-label='dash']")
    expect(dash).to_have_text(f"dash {ports['dash'][0]}")
    shot(page, "task-ports-0-buttons")

    board.click()
    tab = page.locator(".jp-PAI-port-tab:visible")
    expect(tab).to_have_count(1)
    frame = page.frame_locator(".jp-PAI-port-tab:visible iframe")
    expect(frame.locator("h1")).to_have_text("Hello from task trainer-0", timeout=20_000)
    expect(page.locator(".lm-TabBar-tab.lm-mod-current", has_text="TensorBoard")).to_have_count(1)
    src = page.locator(".jp-PAI-port-tab:visible iframe").get_attribute("src")
    assert src.endswith(
        f"/pai/api/jobs/{job['id']}/tasks/trainer-0/ports/{ports['tensorboard'][0]}/"
    )
    assert jobs.token not in src
    # A link inside the app stays inside the proxy (and the tab).
    frame.locator("a", has_text="whoami").click()
    expect(frame.locator("body")).to_contain_text('"path": "/whoami"')
    shot(page, "task-ports-1-tensorboard-tab")

    page.locator(".lm-TabBar-tab", has_text=name).first.click()
    dash.click()
    expect(page.locator(".lm-TabBar-tab.lm-mod-current", has_text="dash")).to_have_count(1)
    dash_frame = page.frame_locator(f".jp-PAI-port-tab iframe[src$='/ports/{ports['dash'][0]}/']")
    expect(dash_frame.locator("h1")).to_have_text("Hello from task trainer-0", timeout=20_000)
    shot(page, "task-ports-2-dash-tab")

    # Once the task has ended there is nothing to open.
    jobs.stop(job["id"])
    jobs.wait_state(job["id"], "STOPPED", timeout=30)
    page.locator(".lm-TabBar-tab", has_text=name).first.click()
    expect(row.locator("button.jp-PAI-port-open")).to_have_count(0, timeout=20_000)
