"""Job state lives on disk: a job keeps running when the Jupyter server is killed, and the
next server on the same state directory shows it, its log intact, and its end."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from tornado.httpclient import AsyncHTTPClient

from .pai import job_spec

TICKS = (
    'for i in $(seq 1 300); do echo "tick $i"; '
    "if [ $i -ge 20 ] && [ -e release-restart ]; then break; fi; sleep 0.2; done"
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ServerProcess:
    """``jupyter server`` as a subprocess with the jupyter_pai extension on."""

    def __init__(self, root: Path, log: Path, env: dict[str, str]) -> None:
        self.port = free_port()
        self.token = "restart-test-token"
        self.log = log
        with open(log, "ab") as out:
            self.proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "jupyter_server",
                    f"--port={self.port}",
                    "--port-retries=0",
                    "--no-browser",
                    "--allow-root",
                    "--ip=127.0.0.1",
                    f"--IdentityProvider.token={self.token}",
                    "--ServerApp.jpserver_extensions=jupyter_pai=True",
                    f"--ServerApp.root_dir={root}",
                    "--LocalBackend.stop_grace_seconds=2",
                ],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=env,
            )
        self.client = AsyncHTTPClient()

    async def request(self, method: str, path: str, body: str | None = None, **headers: str) -> Any:
        return await self.client.fetch(
            f"http://127.0.0.1:{self.port}/pai/api/{path}",
            method=method,
            body=body,
            headers={"Authorization": f"token {self.token}", **headers},
            raise_error=False,
            request_timeout=20,
        )

    async def get(self, path: str) -> Any:
        r = await self.request("GET", path)
        assert r.code == 200, (path, r.code, r.body)
        if r.headers["Content-Type"].startswith("application/json"):
            return json.loads(r.body)
        return r.body.decode()

    async def ready(self, timeout: float = 90) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, f"server exited: {self.log.read_text()[-3000:]}"
            try:
                r = await self.request("GET", "info")
                if r.code == 200:
                    return
            except OSError:
                pass
            await asyncio.sleep(0.2)
        raise AssertionError(f"server not up after {timeout}s: {self.log.read_text()[-3000:]}")

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=30)


@pytest.fixture
def servers(pai_state_dir: Path, tmp_path: Path) -> Iterator[list[ServerProcess]]:
    started: list[ServerProcess] = []
    yield started
    for server in started:
        server.kill()


async def wait_until(check: Any, what: str, timeout: float = 60) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = await check()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.1)


async def test_job_survives_a_killed_server(
    servers: list[ServerProcess], pai_state_dir: Path, tmp_path: Path
) -> None:
    root = tmp_path / "server-root"
    root.mkdir()
    env = {
        **os.environ,
        "HOME": str(tmp_path),
        "JUPYTER_CONFIG_DIR": str(tmp_path / "jupyter-config"),
        "JUPYTER_RUNTIME_DIR": str(tmp_path / "jupyter-runtime"),
    }
    first = ServerProcess(root, tmp_path / "server-1.log", env)
    servers.append(first)
    await first.ready()

    spec = yaml.safe_dump(
        job_spec("survivor", {"worker": {"gpu": 2, "commands": [TICKS, "echo finished"]}})
    )
    r = await first.request("POST", "jobs", spec, **{"Content-Type": "text/yaml"})
    assert r.code == 201, r.body
    job_id = json.loads(r.body)["job"]["id"]
    log_path = f"jobs/{job_id}/logs?role=worker"

    async def three_ticks() -> bool:
        return "tick 3\n" in await first.get(log_path)

    await wait_until(three_ticks, "three ticks through the first server")
    supervisor = json.loads((pai_state_dir / "jobs" / job_id / "job.json").read_text())[
        "supervisor_pid"
    ]
    first.kill()

    second = ServerProcess(root, tmp_path / "server-2.log", env)
    servers.append(second)
    await second.ready()
    listed = {j["id"]: j for j in (await second.get("jobs"))["items"]}
    assert listed[job_id]["state"] == "RUNNING", listed
    before = await second.get(log_path)
    ticks = [line for line in before.splitlines() if line.startswith("tick ")]
    assert len(ticks) >= 3 and ticks == [f"tick {i}" for i in range(1, len(ticks) + 1)], before
    # The same supervisor still runs the job: nothing was restarted.
    assert (
        json.loads((pai_state_dir / "jobs" / job_id / "job.json").read_text())["supervisor_pid"]
        == supervisor
    )

    (root / "release-restart").touch()

    async def ended() -> dict | None:
        job = await second.get(f"jobs/{job_id}")
        return job if job["state"] in ("SUCCEEDED", "FAILED", "STOPPED") else None

    job = await wait_until(ended, "the job to end", timeout=90)
    assert job["state"] == "SUCCEEDED", job
    after = await second.get(log_path)
    assert after.startswith(before)
    lines = after.splitlines()
    assert lines[-1] == "finished"
    assert lines[:-1] == [f"tick {i}" for i in range(1, len(lines))]
    assert len(lines) - 1 >= 20
