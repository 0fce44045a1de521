"""The gang deadlock of the seeds through jupyter-pai on Volcano: 4 GPUs, two jobs of 4
workers x 1 GPU submitted together. Volcano places each job whole or not at all, so both
succeed one after the other and neither ever holds some but not all of its GPUs (the same
pods without a gang deadlock: test_cluster_deadlock.py). A worker progresses only when all
4 of its job run, played by letting kwok end a job's pods once all of them run."""

from __future__ import annotations

import asyncio
import time

import pytest

from jupyter_pai.backends.kubernetes.naming import LABEL_JOB
from jupyter_pai.backends.models import JobState
from jupyter_pai.spec import parse_job
from tests.cluster import kube, kwokconfig, manifests
from tests.cluster.pytest_plugin import TestCluster

from .test_backend_jobs import NS, _cleanup, make_backend

pytestmark = pytest.mark.kube
POOL = "vc-deadlock"
WORKERS = 4
#: Longer than vc-scheduler takes to bind the pods of one placed gang, one API call each.
BIND_SECONDS = 1.0
JOB = """
protocolVersion: 2
name: {name}
type: job
taskRoles:
  worker:
    instances: 4
    resourcePerInstance: {{cpu: 1, memoryMB: 256, gpu: 1}}
    commands: ['sleep 300']
"""


async def test_volcano_gangs_never_hold_part_of_their_gpus(kube_cluster: TestCluster) -> None:
    kube_cluster.add_nodes(manifests.NodeShape(pool=POOL, count=1, gpus=4))
    core = kube.core(kube_cluster.api())
    b = make_backend(kube_cluster, "volcano", node_selector={manifests.POOL_LABEL: POOL})
    await b.start()
    try:
        jobs = await asyncio.gather(
            *(b.submit(parse_job(JOB.format(name=n)).job) for n in ("gang-a", "gang-b"))
        )
        bases = {j.id: j.id.replace("~", "-") for j in jobs}
        partial: list[tuple[str, int, float]] = []
        released: set[str] = set()
        since: dict[str, float] = {}  # job → when it was first seen holding part of its GPUs
        deadline = time.monotonic() + 90
        started = time.monotonic()
        while time.monotonic() < deadline:
            states = {j.id: (await b.get_job(j.id)).state for j in jobs}
            if all(s == JobState.SUCCEEDED for s in states.values()):
                break
            pods = core.list_namespaced_pod(NS, label_selector=LABEL_JOB).items
            for job in jobs:
                mine = [p for p in pods if p.metadata.labels[LABEL_JOB].startswith(bases[job.id])]
                held = [
                    p for p in mine if p.spec.node_name and p.status.phase in ("Pending", "Running")
                ]
                # Holding part of a gang is the deadlock's mark while the gang is being
                # placed: past the moment vc-scheduler's binds of one gang take (a snapshot
                # may fall between two of them), and before it ever ran whole (its pods then
                # end one by one, releasing their GPUs).
                if 0 < len(held) < WORKERS and job.id not in released:
                    first = since.setdefault(job.id, time.monotonic())
                    if time.monotonic() - first > BIND_SECONDS:
                        partial.append((job.id, len(held), round(time.monotonic() - first, 1)))
                else:
                    since.pop(job.id, None)
                running = [p for p in held if p.status.phase == "Running"]
                if len(running) == WORKERS and job.id not in released:
                    released.add(job.id)
                    for p in running:
                        core.patch_namespaced_pod(
                            p.metadata.name,
                            NS,
                            {"metadata": {"annotations": {kwokconfig.RUN_FOR: "2s"}}},
                        )
            await asyncio.sleep(0.2)
        took = time.monotonic() - started
        print(f"\nboth gangs through jupyter-pai: {states} in {took:.1f} s; partial: {partial}")
        assert all(s == JobState.SUCCEEDED for s in states.values()), states
        assert not partial
    finally:
        await b.close()
        _cleanup(kube_cluster, NS)
        kube_cluster.remove_nodes(POOL)
