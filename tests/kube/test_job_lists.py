"""Job lists on Kubernetes, per flavor, through a real Jupyter server: ``GET jobs`` pages,
its ETag (from the watch cache's counters) answers 304 while nothing changes and changes
when a job does, and the ``job-changes`` stream tells of a job's submission, start and
stop."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import pytest
from jupyter_server.utils import url_path_join

from tests.cluster.pytest_plugin import TestCluster
from tests.kube.rest_server import *  # noqa: F403
from tests.kube.test_backend_jobs import _cleanup
from tests.server.sse import EventStream

pytestmark = pytest.mark.kube

JOB = """
protocolVersion: 2
name: {name}
type: job
taskRoles:
  worker:
    instances: 1
    resourcePerInstance: {{cpu: 1, memoryMB: 128, gpu: 1}}
    commands: ['sleep 300']
"""


@pytest.fixture(autouse=True)
def _clean(kube_cluster: TestCluster) -> Any:
    yield
    _cleanup(kube_cluster, "alice")


async def get(fetch: Any, etag: str | None = None, **params: Any) -> Any:
    headers = {"If-None-Match": etag} if etag else {}
    return await fetch("pai", "api", "jobs", params=params, headers=headers, raise_error=False)


def about(job_id: str, *states: str) -> Any:
    def check(name: str, data: Any) -> bool:
        return (
            name in ("added", "modified")
            and data["job"]["id"] == job_id
            and (not states or data["job"]["state"] in states)
        )

    return check


async def test_pages_etags_and_the_change_stream(
    jp_fetch: Any,
    jp_http_port: int,
    jp_base_url: str,
    jp_auth_header: dict[str, str],
    http_server_client: Any,
) -> None:
    path = url_path_join(jp_base_url, "pai/api/job-changes")
    stream = await EventStream.open(jp_http_port, path, jp_auth_header)
    try:
        assert stream.status == 200
        assert await stream.next() == ("ready", {})
        ids = []
        for name in ("listed-a", "listed-b"):
            r = await jp_fetch(
                "pai",
                "api",
                "jobs",
                method="POST",
                body=JOB.format(name=name),
                headers={"Content-Type": "text/yaml"},
            )
            assert r.code == 201
            ids.append(f"alice~{name}")
            await stream.until(f"{name} added", about(ids[-1]), timeout=30)
        if not any(about(ids[0], "RUNNING")(*e) for e in stream.events):  # not at once
            await stream.until("a RUNNING", about(ids[0], "RUNNING"), timeout=90)

        # Pages, newest first (b was submitted last; equal seconds fall back to the id).
        first = await get(jp_fetch, limit=1)
        body = json_of(first)
        assert body["total"] == 2 and [j["id"] for j in body["items"]] == [ids[1]]
        rest = json_of(await get(jp_fetch, limit=1, **{"continue": body["continue"]}))
        assert [j["id"] for j in rest["items"]] == [ids[0]] and rest["continue"] is None

        # While nothing changes, the tag holds (the cluster settles: events, queue status).
        deadline = time.monotonic() + 60
        while True:
            r = await get(jp_fetch)
            again = await get(jp_fetch, r.headers["ETag"])
            if again.code == 304:
                break
            assert again.code == 200 and time.monotonic() < deadline, "no 304 in 60 s"
            await asyncio.sleep(0.5)
        etag = r.headers["ETag"]

        r = await jp_fetch("pai", "api", "jobs", ids[0], method="DELETE")
        assert r.code == 200
        await stream.until("a stopped", about(ids[0], "STOPPING", "STOPPED"), timeout=60)
        changed = await get(jp_fetch, etag)
        assert changed.code == 200 and changed.headers["ETag"] != etag
        states = {j["id"]: j["state"] for j in json_of(changed)["items"]}
        assert states[ids[0]] in ("STOPPING", "STOPPED"), states
    finally:
        await stream.close()


def json_of(response: Any) -> Any:
    assert response.code == 200, response.code
    return json.loads(response.body)
