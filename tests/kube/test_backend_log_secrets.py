"""No part of a job's secret comes back through its task's log on Kubernetes, however the
log is read: byte ranges (every offset, 1 to 3 bytes), the last N lines (every N, from the
cluster and again from the ended-log cache), follow (while the task writes a many-line
secret a line at a time) and follow from the last N lines."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from jupyter_pai.backends.base import LogQuery
from jupyter_pai.backends.kubernetes import KubernetesBackend
from jupyter_pai.backends.logredaction import tail_start
from jupyter_pai.backends.models import JobState, TaskState
from jupyter_pai.spec import parse_job
from tests import secretlogs
from tests.cluster.pytest_plugin import TestCluster
from tests.kube.test_backend_jobs import NS, wait_for

pytestmark = pytest.mark.kube


def _wait_file(path: Path) -> str:
    return f"i=0; while [ ! -e {path} ] && [ $i -lt 600 ]; do i=$((i+1)); sleep 0.1; done"


async def _read(backend: KubernetesBackend, job_id: str, **kw: Any) -> tuple[int, bytes]:
    stream = await backend.logs(job_id, LogQuery(role="worker", index=0, **kw))
    return stream.size, b"".join([c async for c in stream.chunks])


@pytest.mark.parametrize("flavor", ["volcano"])  # pods/log reads alike for every flavor
async def test_no_read_of_a_task_log_shows_any_part_of_a_secret(
    backend: KubernetesBackend, kube_cluster: TestCluster, tmp_path: Path
) -> None:
    start, release = tmp_path / "start", tmp_path / "release"
    spec = {
        "protocolVersion": 2,
        "name": "secret-log",
        "type": "job",
        "secrets": secretlogs.SECRETS,
        "taskRoles": {
            "worker": {
                "instances": 1,
                "resourcePerInstance": {"cpu": 1, "memoryMB": 128, "gpu": 0},
                "commands": secretlogs.commands(first=_wait_file(start), then=_wait_file(release)),
            }
        },
    }
    job = await backend.submit(parse_job(yaml.safe_dump(spec)).job)
    await wait_for(backend, job.id, lambda d: d.tasks[0].state == TaskState.RUNNING, 90)
    pod = backend.views.view(backend.views.primary(job.id)).view.tasks[0].pod
    assert pod is not None
    core = kube_cluster.core()

    def raw_log() -> bytes:
        log = core.read_namespaced_pod_log(pod, NS, container="main", _preload_content=False)
        return bytes(log.data)

    follower = asyncio.ensure_future(_read(backend, job.id, follow=True))
    await asyncio.sleep(0.5)
    start.touch()
    deadline = time.monotonic() + 60
    while b"two tokens" not in (before := await asyncio.to_thread(raw_log)):
        assert time.monotonic() < deadline, before
        await asyncio.sleep(0.2)
    await asyncio.sleep(0.3)
    before = await asyncio.to_thread(raw_log)
    lines = before.count(b"\n")
    tail_followers = {
        n: asyncio.ensure_future(_read(backend, job.id, follow=True, tail=n))
        for n in range(lines + 2)
    }
    await asyncio.sleep(1)
    release.touch()
    done = await wait_for(backend, job.id, lambda d: d.state.terminal, 90)
    assert done.state == JobState.SUCCEEDED, done
    raw = await asyncio.to_thread(raw_log)
    # (The pod runner, as a kubelet, ends a last line without a newline with one.)
    assert raw.startswith(secretlogs.KEY.encode())
    assert raw.rstrip(b"\n").endswith(secretlogs.TOKEN.encode())
    size = len(raw)

    def check(where: str, got: bytes, start: int, end: int = size) -> None:
        assert not secretlogs.revealed(got), (where, got)
        assert got == secretlogs.shown(raw, start, end), where

    check("follow", (await asyncio.wait_for(follower, 30))[1], 0)
    for n, tail_follower in tail_followers.items():
        start_n = tail_start(before, n)
        check(f"follow tail={n}", (await asyncio.wait_for(tail_follower, 30))[1], start_n)
    check("whole", (await _read(backend, job.id))[1], 0)

    # Tails of the ended pod: asked of the cluster, then answered from the backend's memory.
    deadline = time.monotonic() + 30
    while (backend.cache["pods"].get(pod) or {}).get("status", {}).get("phase") != "Succeeded":
        assert time.monotonic() < deadline, backend.cache["pods"].get(pod)
        await asyncio.sleep(0.2)
    hits = backend.ended_logs.hits
    for n in range(raw.count(b"\n") + 3):
        start_n = tail_start(raw, n)
        for _ in range(2):
            check(f"tail={n}", (await _read(backend, job.id, tail=n))[1], start_n)
    assert backend.ended_logs.hits > hits

    for offset in range(size + 1):
        for limit in (1, 2, 3):
            got_size, got = await _read(backend, job.id, offset=offset, limit=limit)
            assert got_size == size
            check(f"offset={offset} limit={limit}", got, offset, offset + limit)
        check(f"offset={offset}", (await _read(backend, job.id, offset=offset))[1], offset)


# The `backend` fixture (a started backend in namespace alice, cleaned up around the test).
from tests.kube.test_backend_jobs import backend  # noqa: E402

__all__ = ["backend"]
