"""A node lost mid-job, on the real control plane: one job per flavour (native, volcano,
kueue) runs a task on each of two nodes of a pool of its own; one node of each pool is
deleted at once. Kubernetes' pod garbage collector marks the pods that ran there
(``DisruptionTarget``: ``DeletionByPodGC``) and deletes them; each job then goes on, waits
or fails as its flavour's rules say, and says which node it lost and when (a ``NodeLost``
event, and in its state's words). A job elsewhere is not touched, and the lost task's GPUs
are no longer counted in use. HiveD places only on the nodes of its own cell config, so it
has no such pool to lose a node of."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import pytest

from jupyter_pai.backends.kubernetes import KubernetesBackend
from jupyter_pai.backends.kubernetes.naming import LABEL_JOB
from jupyter_pai.backends.models import JobState
from jupyter_pai.spec import parse_job
from tests.cluster import manifests
from tests.cluster.pytest_plugin import TestCluster

from .test_backend_jobs import GPU_POOL, NS, _cleanup, make_backend, wait_for

pytestmark = pytest.mark.kube

FLAVORS = ("native", "volcano", "kueue")
# Pod GC waits 40 s before deleting a pod whose node is gone, then the flavour acts.
LOSS_SECONDS = 150.0


def pool(flavor: str) -> str:
    return f"lossy-{flavor[:3]}"


@pytest.fixture
def lossy_pools(kube_cluster: TestCluster) -> Iterator[None]:
    for flavor in FLAVORS:
        kube_cluster.add_nodes(manifests.NodeShape(pool=pool(flavor), count=2, gpus=1))
    _cleanup(kube_cluster, NS)
    try:
        yield
    finally:
        _cleanup(kube_cluster, NS)
        for flavor in FLAVORS:
            kube_cluster.remove_nodes(pool(flavor))


def _job(name: str) -> Any:
    doc = {"name": name, "image": "python:3.11-slim", "command": ["sleep", "600"]}
    return parse_job({**doc, "gpus": 1, "instances": 2}).job


def _uids(cluster: TestCluster, b: KubernetesBackend, job_id: str) -> set[str]:
    base = b.views.primary(job_id)["metadata"]["labels"][LABEL_JOB]
    pods = cluster.core().list_namespaced_pod(NS, label_selector=f"{LABEL_JOB}={base}").items
    return {str(p.metadata.uid) for p in pods}


async def test_a_lost_node_is_named_and_touches_no_other_job(
    kube_cluster: TestCluster, lossy_pools: None
) -> None:
    backends = {
        f: make_backend(kube_cluster, f, node_selector={manifests.POOL_LABEL: pool(f)})
        for f in FLAVORS
    }
    bystander = make_backend(kube_cluster, "volcano", node_selector=GPU_POOL)
    for b in [*backends.values(), bystander]:
        await b.start()
    try:
        jobs = {f: (await b.submit(_job(f"lossy-{f[:3]}"))).id for f, b in backends.items()}
        other = (await bystander.submit(_job("bystander"))).id
        for f, b in backends.items():
            running = await wait_for(
                b,
                jobs[f],
                lambda d: d.state == JobState.RUNNING and all(t.node for t in d.tasks),
                60,
            )
            assert {t.node for t in running.tasks} == {f"{pool(f)}-0", f"{pool(f)}-1"}
        await wait_for(bystander, other, lambda d: d.state == JobState.RUNNING, 60)
        untouched = _uids(kube_cluster, bystander, other)

        lost_at = time.time()
        core = kube_cluster.core()
        for f in FLAVORS:
            core.delete_node(f"{pool(f)}-1")

        for f, b in backends.items():
            lost = f"{pool(f)}-1"
            start = time.monotonic()
            while True:
                events = [e for e in await b.events(jobs[f]) if e.reason == "NodeLost"]
                if events:
                    break
                assert time.monotonic() - start < LOSS_SECONDS, f"{f}: no NodeLost event"
                await asyncio.sleep(1)
            [event] = events
            assert event.type == "Warning"
            assert event.message.startswith(f"node {lost} was lost (the node no longer exists)")
            assert "task " in event.message and event.time.timestamp() >= lost_at - 1
            detail = await b.get_job(jobs[f])
            words = f"{detail.sub_state or ''} {detail.waiting_reason or ''}"
            print(f"\n{f}: {detail.state.value}: {words.strip()}")
            if detail.state in (JobState.WAITING, JobState.FAILED):
                assert f"node {lost} was lost" in words
            # No running task is counted on the lost node any more, nor is the node: its
            # GPU is not in use.
            await wait_for(
                b,
                jobs[f],
                lambda d, lost=lost: all(
                    t.node != lost for t in d.tasks if t.state.value == "RUNNING"
                ),
                LOSS_SECONDS,
            )
            assert lost not in {n.name for n in await b.nodes()}
            assert "task worker-" in event.message and "worker-?" not in event.message
        # The job on other nodes went on with its very pods.
        assert (await bystander.get_job(other)).state == JobState.RUNNING
        assert _uids(kube_cluster, bystander, other) == untouched
    finally:
        for b in [*backends.values(), bystander]:
            await b.close()
