"""A task's web ports open in JupyterLab tabs through the server's proxy: a running task
that serves HTTP on a port labelled ``tensorboard`` gets "Open TensorBoard" in the job
detail's tasks table, another labelled port its own button; each opens a tab whose frame
shows the task's page (local backend), sandboxed: the page cannot act as the Jupyter user."""

from __future__ import annotations

import json
import time
import urllib.request
from pathlib import Path
from typing import Any

from playwright.sync_api import expect

from tests import taskweb

from .conftest import Lab, job_row, open_panel, shot


def submit_one_task(
    jobs: Lab,
    name: str,
    commands: list[str],
    ports: dict[str, int] | None = None,
    extras: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A job of one task of role ``trainer`` (stopped after the test), as submitted."""
    resources: dict[str, Any] = {"cpu": 1, "memoryMB": 256, "gpu": 0}
    if ports:
        resources["ports"] = ports
    spec: dict[str, Any] = {
        "protocolVersion": 2,
        "name": name,
        "type": "job",
        "prerequisites": [{"name": "img", "type": "dockerimage", "uri": "python:3.11"}],
        "taskRoles": {
            "trainer": {
                "instances": 1,
                "dockerImage": "img",
                "resourcePerInstance": resources,
                "commands": commands,
            }
        },
        "extras": extras or {},
    }
    job: dict[str, Any] = jobs.json("jobs", method="POST", body=json.dumps(spec).encode())["job"]
    jobs.submitted.append(job["id"])
    return job


def open_port_tab(page: Any, name: str, label: str = "tensorboard") -> Any:
    """Open task trainer-0's ``label`` port of job ``name`` from the panel; its frame."""
    open_panel(page, "jobs")
    job_row(page, name).locator(".jp-PAI-job-name").click()
    page.locator(
        f".jp-PAI-detail-panel tr[data-task='trainer-0'] button[data-label='{label}']"
    ).click()
    return page.frame_locator(".jp-PAI-port-tab:visible iframe")


def test_open_tensorboard_and_a_labelled_port_in_tabs(page: Any, jobs: Lab) -> None:
    name = f"ui-ports-{int(time.time())}"
    # The same app on both ports: TensorBoard's stand-in and a labelled web UI.
    both = f"{taskweb.command('python3', 'dash')} & {taskweb.command('python3')}"
    job = submit_one_task(jobs, name, [both], ports={"tensorboard": 1, "dash": 1})
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


def test_a_proxied_page_cannot_act_as_the_jupyter_user(page: Any, jobs: Lab) -> None:
    """A task's page (any app, any image: another user may have made it) runs sandboxed:
    its script reads no Jupyter cookie, cannot open a terminal or list files through the
    Jupyter API, and cannot reach into JupyterLab's page."""
    name = f"ui-hostile-{int(time.time())}"
    job = submit_one_task(jobs, name, [taskweb.command("python3")], ports={"tensorboard": 1})
    jobs.wait_state(job["id"], "RUNNING", timeout=30)
    deadline = time.monotonic() + 30
    while b"serving on port" not in jobs.api(f"jobs/{job['id']}/logs"):
        assert time.monotonic() < deadline, "the task's web app never started"
        time.sleep(0.3)
    port = jobs.json(f"jobs/{job['id']}")["tasks"][0]["ports"]["tensorboard"][0]
    terminals_before = _terminals(jobs)

    frame = open_port_tab(page, name)
    expect(frame.locator("h1")).to_have_text("Hello from task trainer-0", timeout=20_000)
    # The hostile page, as a link inside the app would open it.
    frame.locator("body").evaluate("() => { location.href = 'attack'; }")
    result = frame.locator("#result")
    expect(result).not_to_be_empty(timeout=20_000)
    got = json.loads(result.text_content() or "{}")
    shot(page, "task-ports-3-hostile-page")

    assert "_xsrf" not in got.get("cookie", "") and "username" not in got.get("cookie", ""), got
    for attempt in ("terminal", "contents"):
        answer = got[attempt]
        assert "error" in answer or answer["status"] >= 400, (attempt, got)
    assert "parent_error" in got, got
    # The server agrees: no terminal was opened.
    assert _terminals(jobs) == terminals_before
    assert f"/ports/{port}/" in (
        page.locator(".jp-PAI-port-tab:visible iframe").get_attribute("src") or ""
    )


def _terminals(lab: Lab) -> list[Any]:
    request = urllib.request.Request(
        f"{lab.url}api/terminals", headers={"Authorization": f"token {lab.token}"}
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        found: list[Any] = json.loads(response.read())
        return found


def test_real_tensorboard_runs_sandboxed_through_the_proxy(
    page: Any, jobs: Lab, tmp_path: Path
) -> None:
    """OpenPAI's tensorboard runtime plugin starts the real TensorBoard; its app loads and
    reads its data in the sandboxed tab (an opaque origin, no cookies)."""
    name = f"ui-tensorboard-{int(time.time())}"
    logdir = tmp_path / "tb"
    logdir.mkdir()
    plugin = {"plugin": "tensorboard", "parameters": {"logdir": {"run": str(logdir)}}}
    extras = {"com.microsoft.pai.runtimeplugin": [plugin]}
    job = submit_one_task(jobs, name, ["sleep 300"], extras=extras)
    jobs.wait_state(job["id"], "RUNNING", timeout=30)

    deadline = time.monotonic() + 60
    while b"Press CTRL+C to quit" not in jobs.api(f"jobs/{job['id']}/logs"):
        assert time.monotonic() < deadline, "TensorBoard never listened"
        time.sleep(0.5)

    frame = open_port_tab(page, name)
    expect(frame.locator("body")).to_contain_text("No dashboards are active", timeout=30_000)
    expect(frame.locator("body")).to_contain_text(str(logdir))
    shot(page, "task-ports-4-real-tensorboard")
