"""A real JupyterLab with jupyter-pai on the local backend, driven by Debian's Chromium
through Playwright. Every test leaves screenshots in ``test-artifacts/screenshots``."""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = ROOT / "test-artifacts" / "screenshots"
CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@dataclass
class Lab:
    url: str
    token: str
    state_dir: Path
    root_dir: Path
    submitted: list[str] = field(default_factory=list)
    #: What the backend's cluster says of its pods, added to a timeout's message.
    explain: Callable[[], str] | None = None

    def api(
        self,
        path: str,
        *,
        method: str = "GET",
        body: bytes | None = None,
        content_type: str = "application/json",
    ) -> bytes:
        request = urllib.request.Request(
            f"{self.url}pai/api/{path}",
            data=body,
            method=method,
            headers={"Authorization": f"token {self.token}", "Content-Type": content_type},
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            data: bytes = response.read()
            return data

    def json(self, path: str, **kwargs: Any) -> Any:
        return json.loads(self.api(path, **kwargs) or b"null")

    def submit(
        self,
        name: str,
        command: str | list[str],
        *,
        instances: int = 1,
        gpu: int = 0,
        vc: str | None = None,
        task_retries: int = 0,
    ) -> dict[str, Any]:
        """Submit a one-role protocol v2 job through the REST API; the job is stopped
        after the test (see the ``jobs`` fixture)."""
        spec: dict[str, Any] = {
            "protocolVersion": 2,
            "name": name,
            "type": "job",
            "prerequisites": [{"name": "img", "type": "dockerimage", "uri": "python:3.11"}],
            "taskRoles": {
                "worker": {
                    "instances": instances,
                    "dockerImage": "img",
                    "resourcePerInstance": {"cpu": 1, "memoryMB": 256, "gpu": gpu},
                    "commands": [command] if isinstance(command, str) else command,
                    "taskRetryCount": task_retries,
                }
            },
        }
        if vc:
            spec["defaults"] = {"virtualCluster": vc}
        submitted = self.json("jobs", method="POST", body=json.dumps(spec).encode())
        job: dict[str, Any] = submitted["job"]
        self.submitted.append(job["id"])
        return job

    def job(self, job_id: str) -> dict[str, Any]:
        found: dict[str, Any] = self.json(f"jobs/{urllib.parse.quote(job_id, safe='')}")
        return found

    def job_by_name(self, name: str) -> dict[str, Any]:
        jobs = self.json(f"jobs?keyword={urllib.parse.quote(name)}")["items"]
        matching = [j for j in jobs if j["name"] == name]
        assert matching, f"no job named {name}: {[j['name'] for j in jobs]}"
        return dict(matching[0])

    def stop(self, job_id: str) -> None:
        try:
            self.api(f"jobs/{urllib.parse.quote(job_id, safe='')}", method="DELETE")
        except urllib.error.HTTPError as error:
            if error.code != 404:
                raise

    def wait_state(self, job_id: str, *states: str, timeout: float = 60) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            job = self.job(job_id)
            if job["state"] in states:
                return job
            if time.monotonic() > deadline:
                more = f"\n{self.explain()}" if self.explain else ""
                raise AssertionError(f"{job_id} is {job['state']}, not {states}: {job}{more}")
            time.sleep(0.2)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def chromium_path() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        raise RuntimeError(
            "Debian's chromium is not installed: run ./scripts/test.sh, which installs it"
        )
    return found


@contextlib.contextmanager
def run_lab(
    base: Path,
    *,
    env: dict[str, str] | None = None,
    args: list[str] | None = None,
    server_config: dict[str, Any] | None = None,
) -> Iterator[Lab]:
    """Start JupyterLab with jupyter-pai in ``base`` (its own config, settings, workspaces
    and runtime dirs; the storage root ``base/work`` holds data/readme.txt), stop it after."""
    state, root = base / "state", base / "work"
    root.mkdir()
    (root / "data").mkdir()
    (root / "data" / "readme.txt").write_text("hello from the work storage\n")
    # No "receive Jupyter news?" prompt covering the page.
    news = base / "settings" / "@jupyterlab" / "apputils-extension"
    news.mkdir(parents=True)
    (news / "notification.jupyterlab-settings").write_text('{"fetchNews": "false"}')
    # The panel refreshes every second (default 5 s), so short states (RUNNING of a
    # 6-second job) are seen.
    pai_settings = base / "settings" / "jupyter-pai"
    pai_settings.mkdir(parents=True)
    (pai_settings / "plugin.jupyterlab-settings").write_text('{"refreshInterval": 1}')
    if server_config:
        (base / "config").mkdir()
        (base / "config" / "jupyter_server_config.json").write_text(json.dumps(server_config))
    port, token = free_port(), secrets.token_hex(16)
    full_env = {
        **os.environ,
        "JUPYTER_PAI_STATE_DIR": str(state),
        "JUPYTER_CONFIG_DIR": str(base / "config"),
        "JUPYTER_RUNTIME_DIR": str(base / "runtime"),
        "JUPYTERLAB_SETTINGS_DIR": str(base / "settings"),
        "JUPYTERLAB_WORKSPACES_DIR": str(base / "workspaces"),
        **(env or {}),
    }
    log = open(base / "lab.log", "wb")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "jupyterlab",
            "--no-browser",
            f"--port={port}",
            "--ip=127.0.0.1",
            f"--IdentityProvider.token={token}",
            "--ServerApp.allow_root=True",
            f"--ServerApp.root_dir={root}",
            "--LabApp.news_url=",
            "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
            *(args or []),
        ],
        cwd=root,
        env=full_env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}/"
    deadline = time.monotonic() + 90
    while True:
        try:
            urllib.request.urlopen(f"{url}api/status?token={token}", timeout=2)
            break
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                log.close()
                raise RuntimeError(
                    f"JupyterLab did not start:\n{(base / 'lab.log').read_text()[-3000:]}"
                ) from None
            time.sleep(0.5)
    try:
        yield Lab(url=url, token=token, state_dir=state, root_dir=root)
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
        log.close()


@pytest.fixture(scope="session")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    """JupyterLab on the local backend with 4 simulated GPU slots."""
    with run_lab(
        tmp_path_factory.mktemp("lab"),
        env={"JUPYTER_PAI_LOCAL_GPUS": "4", "JUPYTER_PAI_BACKEND": "local"},
        args=["--LocalBackend.stop_grace_seconds=2"],
    ) as started:
        yield started


# Per module: sync Playwright keeps an event loop running in this thread while it is open.
@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium_path(), headless=True, args=CHROMIUM_FLAGS)
        yield b
        b.close()


@contextlib.contextmanager
def open_page(browser: object, lab: Lab, name: str) -> Iterator[Any]:
    """A new browser page on ``lab``; a screenshot ``<name>-end`` is kept when it closes."""
    context = browser.new_context(viewport={"width": 1400, "height": 900})  # type: ignore[attr-defined]
    pg = context.new_page()
    pg.set_default_timeout(30_000)
    # A fresh workspace: no job tabs restored from an earlier test.
    pg.goto(f"{lab.url}lab?reset&token={lab.token}")
    pg.wait_for_selector("#jp-main-dock-panel", state="attached")
    try:
        yield pg
    finally:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        pg.screenshot(path=str(SCREENSHOTS / f"{name}-end.png"))
        context.close()


@pytest.fixture
def page(browser: object, lab: Lab, request: pytest.FixtureRequest) -> Iterator[object]:
    with open_page(browser, lab, request.node.name) as pg:
        yield pg


@pytest.fixture
def jobs(lab: Lab) -> Iterator[Lab]:
    """The lab; every job a test submits through ``lab.submit`` is stopped after it, and
    the test waits until they have ended, so the next test starts on free GPUs."""
    lab.submitted.clear()
    yield lab
    for job_id in lab.submitted:
        lab.stop(job_id)
    for job_id in lab.submitted:
        lab.wait_state(job_id, "STOPPED", "SUCCEEDED", "FAILED", timeout=30)
    lab.submitted.clear()


def open_panel(page: Any, section: str = "launch") -> None:
    """Show the PAI side panel and one of its sections (launch, jobs, storage, cluster)."""
    panel = page.locator("#jupyter-pai-panel")
    if not panel.is_visible():
        page.click('.jp-SideBar [data-id="jupyter-pai-panel"]')
    page.locator(".jp-PAI-info-user").wait_for()
    page.click(f"#jp-PAI-tab-{section}")
    page.locator(f"#jp-PAI-section-{section}").wait_for()


def job_row(page: Any, name: str) -> Any:
    """The job list's row of the job named ``name``."""
    return page.locator(".jp-PAI-job-row").filter(
        has=page.locator(".jp-PAI-job-name", has_text=re.compile(f"^{re.escape(name)}$"))
    )


def shot(page: object, name: str) -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(path))  # type: ignore[attr-defined]
    return path
