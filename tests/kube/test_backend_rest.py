"""The REST API of the foundation against the Kubernetes backend (the same kinds of checks
as tests/server, through jp_fetch on a real Jupyter server, the real control plane behind)."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import pytest
from tornado.httpclient import HTTPClientError

from tests.cluster.pytest_plugin import TestCluster
from tests.kube.rest_server import *  # noqa: F403
from tests.kube.test_backend_jobs import _cleanup

pytestmark = pytest.mark.kube
OWNED = "app.kubernetes.io/managed-by=jupyter-pai"

JOB = """
protocolVersion: 2
name: restjob
type: job
taskRoles:
  worker:
    instances: 2
    resourcePerInstance: {cpu: 1, memoryMB: 128, gpu: 1}
    commands: ['echo "hello from $PAI_CURRENT_TASK_ROLE_CURRENT_TASK_INDEX of $PAI_TASK_ROLE_TASK_COUNT_worker"', 'sleep 300']
"""


@pytest.fixture(autouse=True)
def _clean(kube_cluster: TestCluster) -> Any:
    yield
    _cleanup(kube_cluster, "alice")


async def call(
    fetch: Any, method: str, *path: str, body: str | None = None, **params: Any
) -> tuple[int, Any]:
    try:
        resp = await fetch(
            "pai",
            "api",
            *path,
            method=method,
            body=body,
            params=params,
            headers={"Content-Type": "text/yaml"} if body else None,
        )
    except HTTPClientError as error:
        assert error.response is not None
        text = error.response.body.decode()
        return error.code, json.loads(text) if text.startswith("{") else text
    text = resp.body.decode()
    ctype = resp.headers.get("Content-Type", "")
    return resp.code, json.loads(text) if ctype.startswith("application/json") else text


async def test_rest_api_on_kubernetes(jp_fetch: Any) -> None:
    code, info = await call(jp_fetch, "GET", "info")
    assert code == 200 and info["backend"] == "kubernetes" and info["namespace"] == "alice"
    code, vcs = await call(jp_fetch, "GET", "virtual-clusters")
    assert code == 200 and {"default", "research"} <= {v["name"] for v in vcs["items"]}
    code, submitted = await call(jp_fetch, "POST", "jobs", body=JOB)
    assert code == 201, submitted
    job = submitted["job"]
    assert job["id"] == "alice~restjob" and job["state"] == "WAITING"
    code, again = await call(jp_fetch, "POST", "jobs", body=JOB)
    assert code == 409 and "restjob-2" in again["message"]
    code, bad = await call(
        jp_fetch,
        "POST",
        "jobs",
        body=JOB.replace("taskRoles:", "defaults: {virtualCluster: nope}\ntaskRoles:"),
    )
    assert code == 400 and bad["errors"][0]["path"] == "defaults.virtualCluster"
    deadline = time.monotonic() + 60
    while True:
        code, detail = await call(jp_fetch, "GET", "jobs", "alice~restjob")
        if detail["state"] == "RUNNING" and all(t["state"] == "RUNNING" for t in detail["tasks"]):
            break
        assert time.monotonic() < deadline, detail
        await asyncio.sleep(0.3)
    assert [t["node"] for t in detail["tasks"]] == ["runner-0", "runner-0"]
    code, listed = await call(jp_fetch, "GET", "jobs", state="RUNNING")
    assert code == 200 and [j["id"] for j in listed["items"]] == ["alice~restjob"]
    deadline = time.monotonic() + 20
    while True:
        code, log = await call(
            jp_fetch, "GET", "jobs", "alice~restjob", "logs", role="worker", index="1"
        )
        if "hello from 1 of 2" in log:
            break
        assert time.monotonic() < deadline, log
        await asyncio.sleep(0.3)
    code, events = await call(jp_fetch, "GET", "jobs", "alice~restjob", "events")
    assert code == 200 and "Scheduled" in {e["reason"] for e in events["items"]}
    code, stopped = await call(jp_fetch, "DELETE", "jobs", "alice~restjob")
    assert code == 200 and stopped["state"] in ("STOPPING", "STOPPED")
    deadline = time.monotonic() + 30
    while (await call(jp_fetch, "GET", "jobs", "alice~restjob"))[1]["state"] != "STOPPED":
        assert time.monotonic() < deadline
        await asyncio.sleep(0.3)
    code, listed = await call(jp_fetch, "GET", "jobs")
    assert [j["state"] for j in listed["items"]] == ["STOPPED"]
    code, _ = await call(jp_fetch, "GET", "jobs", "bob~restjob")
    assert code == 404
