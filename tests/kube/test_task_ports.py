"""A task's web port through the Jupyter server on the Kubernetes backend, once per
flavor: the pod (on the runner node, really running) serves HTTP and a WebSocket on its
declared ``tensorboard`` port; the server reaches it through the API server's
port-forward, one forward reused by later requests."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from tests import taskweb
from tests.cluster.pytest_plugin import TestCluster
from tests.kube.rest_server import *  # noqa: F403
from tests.kube.test_backend_jobs import _cleanup
from tests.server.pai import PAIClient, job_spec

pytestmark = pytest.mark.kube


@pytest.fixture(autouse=True)
def _clean(kube_cluster: TestCluster) -> Any:
    _cleanup(kube_cluster, "alice")
    yield
    _cleanup(kube_cluster, "alice")


async def test_a_pods_web_port_through_the_server(
    jp_fetch: Any, jp_ws_fetch: Any, jp_serverapp: Any, http_server_client: Any, tmp_path: Path
) -> None:
    pai = PAIClient(jp_fetch, tmp_path, tmp_path, http_server_client)
    spec = job_spec(
        "board", {"web": {"ports": {"tensorboard": 1}, "commands": [taskweb.command("python3")]}}
    )
    job = await pai.submit(spec)
    await pai.wait_state(job["id"], "RUNNING", timeout=90)
    await pai.wait_log(job["id"], "serving on port", "web", timeout=90)
    task = (await pai.job(job["id"]))["tasks"][0]
    port = task["ports"]["tensorboard"][0]
    base = ("jobs", job["id"], "tasks", "web-0", "ports", str(port))

    for _ in range(3):  # later requests reuse the port-forward
        page = await pai.port_request("GET", *base, "/")
        assert page.code == 200, page
        assert "Hello from task web-0" in page.text
    backend = jp_serverapp.web_app.settings["jupyter_pai"]._backend
    pod = _pod(backend, job["id"])
    assert backend.port_forwards.opened() == [(pod, port)]
    # On this machine the forward is a Unix socket only this user may open, not a port.
    forward = Path(await backend.port_forwards.local_socket(pod, port))
    assert await asyncio.to_thread(forward.is_socket)
    assert (await asyncio.to_thread(forward.parent.stat)).st_mode & 0o777 == 0o700

    echoed = await pai.port_request("POST", *base, "echo", body=b"to the pod")
    assert (echoed.code, echoed.text) == (200, "echo: to the pod")
    seen = (await pai.port_request("GET", *base, "whoami")).json()
    assert not {n.lower() for n in seen["headers"]} & {"authorization", "cookie"}

    ws = await jp_ws_fetch("pai", "api", *base, "ws")
    await ws.write_message("over the port-forward")
    assert await ws.read_message() == "echo: over the port-forward"
    ws.close()

    held = {p for ports in task["ports"].values() for p in ports}
    undeclared = next(p for p in range(20000, 65536) if p not in held)
    wrong = await pai.request("GET", *base[:-1], str(undeclared), "/")
    assert wrong.code == 404 and wrong.json()["errors"][0]["path"] == "port", wrong

    await pai.stop(job["id"])
    await pai.wait_state(job["id"], "STOPPED", timeout=60)
    ended = await pai.port_request("GET", *base, "/")
    assert ended.code == 409, ended


def _pod(backend: Any, job_id: str) -> str:
    d = backend.views.view(backend.views.primary(job_id))
    pod: str = d.view.tasks[0].pod
    return pod
