"""The classic gang deadlock, measured: a cluster of 4 GPUs and two jobs of 4 workers x
1 GPU whose workers submit interleaved. A worker only makes progress when all 4 workers
of its job run (as in data-parallel training), which the test plays by letting kwok
finish a job's pods once all of them run."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from tests.cluster import kube, kwokconfig, manifests
from tests.cluster.pytest_plugin import TestCluster

from .workloads import JOB_LABEL, bound, create_pod_group, delete_by_label, pod

pytestmark = pytest.mark.kube
NS = "default"
WORKERS = 4
JOBS = ("job-a", "job-b")


@dataclass
class Outcome:
    finished: dict[str, bool] = field(default_factory=dict)
    max_bound: dict[str, int] = field(default_factory=dict)
    overlap: bool = False  # both jobs had active bound pods at one time


@pytest.fixture
def four_gpus(kube_cluster: TestCluster) -> Iterator[str]:
    kube_cluster.add_nodes(manifests.NodeShape(pool="four-gpus", count=1, gpus=4))
    yield "four-gpus"
    kube_cluster.remove_nodes("four-gpus")


def _run(api: Any, pool: str, gang: bool, prefix: str, window: float) -> Outcome:
    core = kube.core(api)
    jobs = [f"{prefix}-{j}" for j in JOBS]
    if gang:
        for job in jobs:
            create_pod_group(api, NS, job, WORKERS)
    for i in range(WORKERS):  # interleaved: a0 b0 a1 b1 …
        for job in jobs:
            core.create_namespaced_pod(
                NS, pod(f"{job}-{i}", job, 1, pool, group=job if gang else None)
            )
    outcome = Outcome(finished=dict.fromkeys(jobs, False), max_bound=dict.fromkeys(jobs, 0))
    released: set[str] = set()
    deadline = time.monotonic() + window
    try:
        while time.monotonic() < deadline and not all(outcome.finished.values()):
            active = {}
            # One list for both jobs: a consistent snapshot. Two lists let the scheduler
            # place b's gang between them, when a's pods have just ended, and read as overlap.
            snapshot = core.list_namespaced_pod(
                NS, label_selector=f"{JOB_LABEL} in ({','.join(jobs)})"
            ).items
            for job in jobs:
                pods = [p for p in snapshot if p.metadata.labels.get(JOB_LABEL) == job]
                active[job] = bound(pods, active_only=True)
                outcome.max_bound[job] = max(outcome.max_bound[job], bound(pods))
                running = [p for p in pods if p.status.phase == "Running"]
                if len(running) == WORKERS and job not in released:
                    # All workers up: the job makes progress and ends in 2 s.
                    released.add(job)
                    for p in running:
                        core.patch_namespaced_pod(
                            p.metadata.name,
                            NS,
                            {"metadata": {"annotations": {kwokconfig.RUN_FOR: "2s"}}},
                        )
                outcome.finished[job] = len(pods) == WORKERS and all(
                    p.status.phase == "Succeeded" for p in pods
                )
            if all(active.values()):
                outcome.overlap = True
            time.sleep(0.2)
    finally:
        for job in jobs:
            delete_by_label(api, NS, job)
            if gang:
                kube.custom(api).delete_namespaced_custom_object(
                    "scheduling.k8s.io", "v1alpha2", NS, "podgroups", job
                )
    return outcome


def test_gang_avoids_the_deadlock_that_plain_scheduling_hits(
    kube_cluster: TestCluster, four_gpus: str
) -> None:
    api = kube_cluster.api()
    plain = _run(api, four_gpus, gang=False, prefix="plain", window=15)
    core = kube.core(api)
    deadline = time.monotonic() + 30
    while core.list_namespaced_pod(NS, label_selector=JOB_LABEL).items:
        assert time.monotonic() < deadline, "plain pods not cleaned up"
        time.sleep(0.2)
    gang = _run(api, four_gpus, gang=True, prefix="gang", window=60)
    print(f"\nwithout gang: {plain}\nwith gang:    {gang}")
    # Without a gang each job holds some of the 4 GPUs, none gets all 4: deadlock.
    assert not any(plain.finished.values())
    assert all(0 < n < WORKERS for n in plain.max_bound.values())
    assert plain.overlap
    # With a gang both finish, one after the other, never sharing the GPUs.
    assert all(gang.finished.values())
    assert all(n == WORKERS for n in gang.max_bound.values())
    assert not gang.overlap
