"""A real JupyterLab with jupyter-pai on the local backend, driven by Debian's Chromium
through Playwright. Every test leaves screenshots in ``test-artifacts/screenshots``."""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

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


@pytest.fixture(scope="session")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    base = tmp_path_factory.mktemp("lab")
    state, root = base / "state", base / "work"
    root.mkdir()
    (root / "data").mkdir()
    (root / "data" / "readme.txt").write_text("hello from the work storage\n")
    # No "receive Jupyter news?" prompt covering the page.
    news = base / "settings" / "@jupyterlab" / "apputils-extension"
    news.mkdir(parents=True)
    (news / "notification.jupyterlab-settings").write_text('{"fetchNews": "false"}')
    port, token = free_port(), secrets.token_hex(16)
    env = {
        **os.environ,
        "JUPYTER_PAI_STATE_DIR": str(state),
        "JUPYTER_PAI_LOCAL_GPUS": "4",
        "JUPYTER_PAI_BACKEND": "local",
        "JUPYTER_CONFIG_DIR": str(base / "config"),
        "JUPYTER_RUNTIME_DIR": str(base / "runtime"),
        "JUPYTERLAB_SETTINGS_DIR": str(base / "settings"),
        "JUPYTERLAB_WORKSPACES_DIR": str(base / "workspaces"),
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
            "--LocalBackend.stop_grace_seconds=2",
            "--LabApp.news_url=",
            "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
        ],
        cwd=root,
        env=env,
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
    yield Lab(url=url, token=token, state_dir=state, root_dir=root)
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
    log.close()


@pytest.fixture(scope="session")
def browser() -> Iterator[object]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium_path(), headless=True, args=CHROMIUM_FLAGS)
        yield b
        b.close()


@pytest.fixture
def page(browser: object, lab: Lab, request: pytest.FixtureRequest) -> Iterator[object]:
    context = browser.new_context(viewport={"width": 1400, "height": 900})  # type: ignore[attr-defined]
    pg = context.new_page()
    pg.set_default_timeout(30_000)
    pg.goto(f"{lab.url}lab?token={lab.token}")
    pg.wait_for_selector("#jp-main-dock-panel", state="attached")
    yield pg
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    pg.screenshot(path=str(SCREENSHOTS / f"{request.node.name}-end.png"))
    context.close()


def shot(page: object, name: str) -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(path))  # type: ignore[attr-defined]
    return path
