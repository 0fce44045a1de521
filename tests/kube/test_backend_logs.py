"""Logs of earlier attempts, on the real control plane: the pod runner keeps a restarted
container's previous log (``previous=true``, as a kubelet does), and the backend reads a
retried task's earlier attempt (native flavor: the Job controller replaces the pod)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException

from jupyter_pai.backends.base import LogQuery
from jupyter_pai.backends.kubernetes import KubernetesBackend
from jupyter_pai.backends.models import JobState, TaskState
from jupyter_pai.errors import NotFound
from jupyter_pai.spec import parse_job
from tests.cluster import manifests
from tests.cluster.pytest_plugin import TestCluster
from tests.kube.test_backend_jobs import NS, read_log, wait_for

pytestmark = pytest.mark.kube

# Fails on its first run, succeeds on the next: a marker file on this host (the runner
# runs pods here) tells the runs apart.
FLAKY = (
    'if [ -e {marker} ]; then echo "attempt second"; '
    'else touch {marker}; echo "attempt first"; exit 3; fi'
)


def test_runner_keeps_the_previous_container_log(kube_cluster: TestCluster, tmp_path: Path) -> None:
    core = kube_cluster.core("alice")
    name = "restarts-once"
    core.create_namespaced_pod(
        NS,
        {
            "metadata": {"name": name},
            "spec": {
                "nodeSelector": {manifests.RUNNER_LABEL: "true"},
                "restartPolicy": "OnFailure",
                "containers": [
                    {
                        "name": "main",
                        "image": "busybox",
                        "command": ["sh", "-c", FLAKY.format(marker=tmp_path / "ran")],
                    }
                ],
            },
        },
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            pod: Any = core.read_namespaced_pod(name, NS)
            if pod.status.phase == "Succeeded":
                break
            assert time.monotonic() < deadline, pod.status
            time.sleep(0.3)
        assert pod.status.container_statuses[0].restart_count == 1
        current = core.read_namespaced_pod_log(name, NS, container="main")
        previous = core.read_namespaced_pod_log(name, NS, container="main", previous=True)
        assert current == "attempt second\n"
        assert previous == "attempt first\n"
    finally:
        core.delete_namespaced_pod(name, NS, grace_period_seconds=0)


def test_previous_of_a_container_that_never_restarted_is_a_400(kube_cluster: TestCluster) -> None:
    core = kube_cluster.core("alice")
    name = "never-restarts"
    core.create_namespaced_pod(
        NS,
        {
            "metadata": {"name": name},
            "spec": {
                "nodeSelector": {manifests.RUNNER_LABEL: "true"},
                "restartPolicy": "Never",
                "containers": [{"name": "main", "image": "busybox", "command": ["true"]}],
            },
        },
    )
    try:
        deadline = time.monotonic() + 60
        while core.read_namespaced_pod(name, NS).status.phase != "Succeeded":
            assert time.monotonic() < deadline
            time.sleep(0.3)
        with pytest.raises(ApiException) as err:
            core.read_namespaced_pod_log(name, NS, container="main", previous=True)
        assert err.value.status == 400
        assert "previous terminated container" in str(err.value.body)
    finally:
        core.delete_namespaced_pod(name, NS, grace_period_seconds=0)


RETRIED = """
protocolVersion: 2
name: retried
type: job
taskRoles:
  worker:
    instances: 1
    taskRetryCount: 1
    resourcePerInstance: {{cpu: 1, memoryMB: 128, gpu: 0}}
    commands: ['{command}']
"""


async def test_a_retried_tasks_earlier_attempt_log_is_readable(
    backend: KubernetesBackend, tmp_path: Path
) -> None:
    spec = RETRIED.format(command=FLAKY.format(marker=tmp_path / "ran"))
    job = await backend.submit(parse_job(spec).job)
    done = await wait_for(backend, job.id, lambda d: d.state.terminal, 90)
    assert done.state == JobState.SUCCEEDED, done
    task = done.tasks[0]
    assert task.state == TaskState.SUCCEEDED and task.retries == 1
    first = await read_log(backend, job.id, "worker", 0, attempt=0)
    second = await read_log(backend, job.id, "worker", 0, attempt=1)
    latest = await read_log(backend, job.id, "worker", 0)
    assert "attempt first" in first and "attempt second" not in first
    assert "attempt second" in second and "attempt first" not in second
    assert latest == second
    with pytest.raises(NotFound):
        await read_log(backend, job.id, "worker", 0, attempt=2)


NUMBERED = """
protocolVersion: 2
name: numbered
type: job
taskRoles:
  worker:
    instances: 1
    resourcePerInstance: {cpu: 1, memoryMB: 128, gpu: 0}
    commands: ['for i in $(seq 1 2000); do echo "line $i"; done']
"""


async def test_byte_ranges_and_size_of_a_task_log(backend: KubernetesBackend) -> None:
    """What the log viewer asks for: the size (limit=0), then ranges by offset and limit."""
    job = await backend.submit(parse_job(NUMBERED).job)
    done = await wait_for(backend, job.id, lambda d: d.state.terminal, 90)
    assert done.state == JobState.SUCCEEDED, done
    whole = "".join(f"line {i}\n" for i in range(1, 2001)).encode()
    probe = await backend.logs(job.id, LogQuery(role="worker", index=0, limit=0))
    assert probe.size == len(whole)
    assert b"".join([c async for c in probe.chunks]) == b""
    middle = await backend.logs(job.id, LogQuery(role="worker", index=0, offset=1000, limit=300))
    assert middle.size == len(whole)
    assert b"".join([c async for c in middle.chunks]) == whole[1000:1300]
    tail = await backend.logs(job.id, LogQuery(role="worker", index=0, offset=len(whole) - 10))
    assert b"".join([c async for c in tail.chunks]) == whole[-10:]
    assert await read_log(backend, job.id, "worker", 0, tail=2) == "line 1999\nline 2000\n"


SECRET_LINES = """
protocolVersion: 2
name: secret-lines
type: job
secrets: {token: s3cr3t-value-1234}
taskRoles:
  worker:
    instances: 1
    resourcePerInstance: {cpu: 1, memoryMB: 128, gpu: 0}
    commands: ['for i in $(seq 1 50); do echo "line $i token=<% $secrets.token %>"; done']
"""


async def test_an_ended_tasks_tail_is_asked_of_the_cluster_once(
    backend: KubernetesBackend,
) -> None:
    """An exited container's log is final: a second read of its last lines comes from the
    backend's memory, not kube-apiserver and the kubelet, and its secret stays hidden."""
    job = await backend.submit(parse_job(SECRET_LINES).job)
    done = await wait_for(backend, job.id, lambda d: d.state.terminal, 90)
    assert done.state == JobState.SUCCEEDED, done
    # The cache goes by the pod's own phase (its containers have exited), not the job's.
    name = backend.views.view(backend.views.primary(job.id)).view.tasks[0].pod
    assert name is not None
    deadline = time.monotonic() + 30
    while (backend.cache["pods"].get(name) or {}).get("status", {}).get("phase") != "Succeeded":
        assert time.monotonic() < deadline, backend.cache["pods"].get(name)
        await asyncio.sleep(0.2)
    rest = backend._rest()
    first = await read_log(backend, job.id, "worker", 0, tail=3)
    asked = rest.requests
    hits = backend.ended_logs.hits
    again = await read_log(backend, job.id, "worker", 0, tail=3)
    assert again == first == "".join(f"line {i} token=******\n" for i in (48, 49, 50)), first
    assert backend.ended_logs.hits == hits + 1
    assert rest.requests - asked <= 1  # the Secret's values (to blank), not the log
    other = await read_log(backend, job.id, "worker", 0, tail=1)  # another question: asked
    assert other == "line 50 token=******\n"
    assert backend.ended_logs.hits == hits + 1


# The `backend` fixture (a started backend in namespace alice, cleaned up around the test).
from tests.kube.test_backend_jobs import backend  # noqa: E402

__all__ = ["backend"]
