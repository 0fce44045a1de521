"""Log follows through the log relay, on the real control plane: the relay (a process of
its own) opens the follow and writes it straight to the client's connection, secrets
blanked; killed, its follows end and the next follow starts it again."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from jupyter_pai.backends.kubernetes import KubernetesBackend
from tests.cluster.pytest_plugin import TestCluster
from tests.kube.rest_server import *  # noqa: F403
from tests.kube.test_backend_jobs import _cleanup
from tests.kube.test_backend_rest import call
from tests.secretlogs import HIDDEN, TOKEN

pytestmark = [pytest.mark.kube, pytest.mark.parametrize("flavor", ["native"])]

JOB = f"""
protocolVersion: 2
name: relayed
type: job
secrets: {{token: {TOKEN}}}
taskRoles:
  worker:
    instances: 1
    resourcePerInstance: {{cpu: 1, memoryMB: 128, gpu: 0}}
    commands: ['i=0; while true; do echo "tick $i <% $secrets.token %>"; i=$((i+1)); sleep 0.05; done']
"""


@pytest.fixture(autouse=True)
def _clean(kube_cluster: TestCluster) -> Any:
    yield
    _cleanup(kube_cluster, "alice")


async def follow(port: int, base_url: str, auth: dict[str, str]) -> tuple[bytes, Any]:
    """A follow of the job's task asked for over a raw connection: the response's head and
    the connection (reader, writer) its body comes on."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    target = f"{base_url}pai/api/jobs/alice~relayed/logs?role=worker&index=0&follow=true"
    headers = "".join(f"{k}: {v}\r\n" for k, v in auth.items())
    writer.write(f"GET {target} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{headers}\r\n".encode())
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 30)
    return head, (reader, writer)


async def body_until(reader: asyncio.StreamReader, text: bytes, timeout: float = 30) -> bytes:
    got = b""
    deadline = time.monotonic() + timeout
    while text not in got:
        assert time.monotonic() < deadline, got[-500:]
        chunk = await asyncio.wait_for(reader.read(65536), deadline - time.monotonic())
        assert chunk, f"the follow ended early: {got[-500:]!r}"
        got += chunk
    return got


async def running(fetch: Any) -> None:
    code, submitted = await call(fetch, "POST", "jobs", body=JOB)
    assert code == 201, submitted
    deadline = time.monotonic() + 90
    while (await call(fetch, "GET", "jobs", "alice~relayed"))[1]["state"] != "RUNNING":
        assert time.monotonic() < deadline
        await asyncio.sleep(0.3)


def relay_of(serverapp: Any) -> Any:
    backend = serverapp.web_app.settings["jupyter_pai"]._backend
    assert isinstance(backend, KubernetesBackend)
    assert backend._relay is not None, "no follow went through the log relay"
    return backend._relay


def is_relay(pid: int) -> bool:
    try:
        return b"logrelay" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


async def test_a_follow_is_written_by_the_relay_to_the_client_with_secrets_blanked(
    jp_fetch: Any, jp_http_port: int, jp_base_url: str, jp_auth_header: Any, jp_serverapp: Any
) -> None:
    await running(jp_fetch)
    head, (reader, writer) = await follow(jp_http_port, jp_base_url, jp_auth_header)
    try:
        assert head.startswith(b"HTTP/1.1 200 OK\r\n"), head
        # Handed over: the relay writes the body, chunked, and closes at its end.
        assert b"\r\nTransfer-Encoding: chunked\r\n" in head
        assert b"\r\nConnection: close\r\n" in head
        assert b"\r\nX-Task: worker-0\r\n" in head
        body = await body_until(reader, b"tick 5 ")
        assert HIDDEN in body and TOKEN.encode() not in body
    finally:
        writer.close()
    relay = relay_of(jp_serverapp)
    assert relay.pid is not None and is_relay(relay.pid)
    assert os.getppid() != relay.pid and relay.pid != os.getpid()


async def test_a_killed_relay_ends_its_follows_and_the_next_follow_starts_it_again(
    jp_fetch: Any, jp_http_port: int, jp_base_url: str, jp_auth_header: Any, jp_serverapp: Any
) -> None:
    await running(jp_fetch)
    _, (reader, writer) = await follow(jp_http_port, jp_base_url, jp_auth_header)
    await body_until(reader, b"tick 3 ")
    first = relay_of(jp_serverapp).pid
    assert first is not None
    os.kill(first, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while await asyncio.wait_for(reader.read(65536), 10):
        assert time.monotonic() < deadline, "the follow went on without its relay"
    writer.close()

    head, (reader, writer) = await follow(jp_http_port, jp_base_url, jp_auth_header)
    try:
        assert head.startswith(b"HTTP/1.1 200 OK\r\n"), head
        body = await body_until(reader, b"tick")
        assert TOKEN.encode() not in body
    finally:
        writer.close()
    second = relay_of(jp_serverapp).pid
    assert second is not None and second != first and is_relay(second)
