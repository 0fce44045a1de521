"""OpenPAI's virtual clusters on Kueue: ClusterQueues `a` and `b` in one cohort, 2 GPUs
nominal quota each, on a runner node of 4. A job in `a` borrows `b`'s idle quota; when
`b` needs it, Kueue preempts the borrower (`reclaimWithinCohort`): its Workload is
evicted, its JobSet suspended (the pods go) and requeued; the job goes back to WAITING
saying why (not FAILED), runs again once `b`'s job ends and succeeds. jupyter-pai reads
the ClusterQueues as VCs and the Workload's conditions as the reason, and keeps the
preempted attempt's log."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator

import pytest
from kubernetes.client.exceptions import ApiException

from jupyter_pai.backends.kubernetes import KubernetesBackend
from jupyter_pai.backends.models import JobState, VirtualCluster
from jupyter_pai.spec import parse_job
from tests.cluster import kube
from tests.cluster import kueue as cluster_kueue
from tests.cluster.pytest_plugin import TestCluster

from .test_backend_jobs import NS, RUNNER, _cleanup, make_backend, read_log, wait_for
from .test_volcano_reclaim import STEPS, _wait_for_log

pytestmark = pytest.mark.kube
QUEUES = ("a", "b")


@pytest.fixture
def queues(kube_cluster: TestCluster) -> Iterator[None]:
    """ClusterQueues `a` and `b` in cohort `reclaim` (2 GPUs each, lending and borrowing
    all of it) with their LocalQueues in alice's namespace."""
    api = kube_cluster.api()
    kube.apply(
        api,
        [cluster_kueue.cluster_queue(q, 2, cohort="reclaim") for q in QUEUES]
        + [cluster_kueue.local_queue(q, NS) for q in QUEUES],
    )
    yield
    _cleanup(kube_cluster, NS)
    custom = kube.custom(api)
    for q in QUEUES:
        custom.delete_namespaced_custom_object("kueue.x-k8s.io", "v1beta2", NS, "localqueues", q)
    for q in QUEUES:
        deadline = time.monotonic() + 30
        while True:  # its finalizer holds it while workloads are admitted in it
            try:
                custom.get_cluster_custom_object("kueue.x-k8s.io", "v1beta2", "clusterqueues", q)
                custom.delete_cluster_custom_object("kueue.x-k8s.io", "v1beta2", "clusterqueues", q)
            except ApiException as error:
                if error.status == 404:
                    break
                raise
            assert time.monotonic() < deadline, f"ClusterQueue {q} not deleted"
            time.sleep(0.5)


async def test_a_borrower_is_preempted_for_the_lender_and_runs_again(
    kube_cluster: TestCluster, queues: None
) -> None:
    """On the runner node (4 GPUs, real processes), so the preempted attempt has a log."""
    b = make_backend(kube_cluster, "kueue", node_selector=RUNNER)
    await b.start()
    try:
        vcs = {v.name: v for v in await b.virtual_clusters()}
        assert (vcs["a"].guaranteed_gpus, vcs["a"].capacity.gpu) == (2, 4)
        assert vcs["a"].may_borrow and vcs["a"].may_lend
        big = await b.submit(parse_job(STEPS.format(name="big", vc="a", n=2, seconds=25)).job)
        await wait_for(b, big.id, lambda d: d.state == JobState.RUNNING, 60)
        first = await _wait_for_log(b, big.id, "started")
        # Kueue writes the ClusterQueues' status a moment after it admits.
        vcs = await _vcs_when(b, lambda v: v["a"].used.gpu == 4)
        a_vc, b_vc = vcs["a"], vcs["b"]
        assert (a_vc.guaranteed_gpus, a_vc.used.gpu, a_vc.borrowed_gpus) == (2, 4, 2)
        # a's two extra GPUs are b's idle quota, on loan.
        assert (b_vc.guaranteed_gpus, b_vc.used.gpu, b_vc.lent_gpus) == (2, 0, 2)

        submitted = time.monotonic()
        urgent = await b.submit(parse_job(STEPS.format(name="urgent", vc="b", n=1, seconds=5)).job)
        preempted = await wait_for(
            b, big.id, lambda d: (d.waiting_reason or "").startswith("preempted"), 30
        )
        print(f"\na's job: {preempted.waiting_reason}")
        assert preempted.state == JobState.WAITING
        assert preempted.waiting_reason == (
            "preempted: ClusterQueue b reclaimed the quota it lent; waiting for 4 GPUs"
        )
        await wait_for(b, urgent.id, lambda d: d.state == JobState.RUNNING, 30)
        took = time.monotonic() - submitted
        print(f"b's job ran {took:.1f} s after its submission (a's job preempted)")
        assert took < 30
        # a's job waits (not FAILED) while b holds its share.
        assert (await b.get_job(big.id)).state == JobState.WAITING

        await wait_for(b, urgent.id, lambda d: d.state == JobState.SUCCEEDED, 60)
        ended = time.monotonic()
        await wait_for(b, big.id, lambda d: d.state == JobState.RUNNING, 60)
        print(f"a's job ran again {time.monotonic() - ended:.1f} s after b's job ended")
        done = await wait_for(b, big.id, lambda d: d.state == JobState.SUCCEEDED, 90)
        assert done.waiting_reason is None
        # The preempted attempt's log is kept (attempt 0), the new one is the task's log.
        kept = await read_log(b, big.id, "worker", 0, attempt=0)
        assert kept.startswith(first) and "finished" not in kept, kept
        last = await read_log(b, big.id, "worker", 0)
        assert "started" in last and "finished" in last and first not in last, last
    finally:
        await b.close()


async def _vcs_when(
    b: KubernetesBackend, check: Callable[[dict[str, VirtualCluster]], bool], timeout: float = 15
) -> dict[str, VirtualCluster]:
    deadline = time.monotonic() + timeout
    while True:
        vcs = {v.name: v for v in await b.virtual_clusters()}
        if check(vcs) or time.monotonic() > deadline:
            return vcs
        await asyncio.sleep(0.3)
