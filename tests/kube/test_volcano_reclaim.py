"""OpenPAI's virtual clusters on Volcano: queues `a` and `b`, guaranteed 2 GPUs each, on a
runner node of 4. A job in `a` borrows `b`'s idle GPUs; when `b` needs them, Volcano's `reclaim`
action (capacity plugin) evicts the borrower, whose job goes back to WAITING saying why
(not FAILED), runs again once `b`'s job ends and succeeds. jupyter-pai reads the queues
as VCs and the eviction as the reason, and keeps the preempted attempt's log."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import pytest
from kubernetes.client.exceptions import ApiException

from jupyter_pai.backends.kubernetes import KubernetesBackend
from jupyter_pai.backends.kubernetes.flavors.volcano_queues import queue_manifest
from jupyter_pai.backends.models import JobState
from jupyter_pai.errors import NotFound
from jupyter_pai.spec import parse_job
from tests.cluster import kube
from tests.cluster.pytest_plugin import TestCluster

from .test_backend_jobs import NS, RUNNER, _cleanup, make_backend, read_log, wait_for

pytestmark = pytest.mark.kube


@pytest.fixture
def queues(kube_cluster: TestCluster) -> Iterator[None]:
    """Queues `a` and `b` (2 GPUs each, both borrow and lend); the runner node has 4 GPUs."""
    custom = kube.custom(kube_cluster.api())
    for name in ("a", "b"):
        custom.create_cluster_custom_object(
            "scheduling.volcano.sh", "v1beta1", "queues", queue_manifest(name, 2)
        )
    yield
    _cleanup(kube_cluster, NS)
    for name in ("a", "b"):
        deadline = time.monotonic() + 30
        while True:  # a queue is refused deletion while it holds jobs' pod groups
            try:
                custom.delete_cluster_custom_object(
                    "scheduling.volcano.sh", "v1beta1", "queues", name
                )
                break
            except ApiException as error:
                if error.status == 404:
                    break
                assert time.monotonic() < deadline, error.body
                time.sleep(0.5)


# A job that says which attempt printed, then ends by itself.
STEPS = """
protocolVersion: 2
name: {name}
type: job
defaults: {{virtualCluster: {vc}}}
taskRoles:
  worker:
    instances: {n}
    resourcePerInstance: {{cpu: 1, memoryMB: 256, gpu: 2}}
    commands: ['echo "started $(date +%s%N)"', 'sleep {seconds}', 'echo finished']
"""


async def test_a_borrower_is_preempted_for_the_lender_and_runs_again(
    kube_cluster: TestCluster, queues: None
) -> None:
    """On the runner node (4 GPUs, real processes), so the preempted attempt has a log."""
    b = make_backend(kube_cluster, "volcano", node_selector=RUNNER)
    await b.start()
    try:
        big = await b.submit(parse_job(STEPS.format(name="big", vc="a", n=2, seconds=25)).job)
        await wait_for(b, big.id, lambda d: d.state == JobState.RUNNING, 60)
        first = await _wait_for_log(b, big.id, "started")
        vcs = {v.name: v for v in await b.virtual_clusters()}
        a_vc, b_vc = vcs["a"], vcs["b"]
        assert (a_vc.guaranteed_gpus, a_vc.used.gpu, a_vc.borrowed_gpus) == (2, 4, 2)
        assert a_vc.may_borrow and a_vc.may_lend
        # Volcano counts the whole cluster's GPUs, most of them no queue's share: a's two
        # extra GPUs are on loan from those, so b lends nothing in this view.
        assert (b_vc.guaranteed_gpus, b_vc.used.gpu, b_vc.borrowed_gpus) == (2, 0, 0)
        # jobRetryCount 0: no failure restarts the job, and preemptions may, however often
        # (Volcano's admission would have made 0 into 3).
        vcjob = kube.custom(kube_cluster.api()).get_namespaced_custom_object(
            "batch.volcano.sh",
            "v1alpha1",
            NS,
            "jobs",
            b.cache["primary"].by_index(big.id)[0]["metadata"]["name"],
        )
        assert vcjob["spec"]["maxRetry"] == 2**31 - 1

        submitted = time.monotonic()
        urgent = await b.submit(parse_job(STEPS.format(name="urgent", vc="b", n=1, seconds=5)).job)
        # While Volcano recreates the pods, only the PodGroup's event says "reclaim": the
        # count comes with the pods' own events.
        reason = "preempted: VC b reclaimed 2 GPUs"
        preempted = await wait_for(b, big.id, lambda d: d.waiting_reason == reason, 30)
        assert preempted.state == JobState.WAITING
        await wait_for(b, urgent.id, lambda d: d.state == JobState.RUNNING, 30)
        took = time.monotonic() - submitted
        print(f"\nb's job ran {took:.1f} s after its submission (a's job preempted)")
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
        task = next(t for t in done.tasks if t.index == 0)
        assert task.retries == 1, task
        kept = await read_log(b, big.id, "worker", 0, attempt=0)
        assert kept.startswith(first) and "finished" not in kept, kept
        last = await read_log(b, big.id, "worker", 0)
        assert "started" in last and "finished" in last and first not in last, last
        assert await read_log(b, big.id, "worker", 0, attempt=1) == last
        assert await read_log(b, big.id, "worker", 0, attempt=0, tail=1) == first
    finally:
        await b.close()


async def _wait_for_log(b: KubernetesBackend, job_id: str, text: str, timeout: float = 30) -> str:
    """The first line of worker 0's log once it contains ``text``."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            log = await read_log(b, job_id, "worker", 0)
        except NotFound:  # the runner has not started the container yet
            log = ""
        if text in log:
            return log.splitlines(keepends=True)[0]
        assert time.monotonic() < deadline, f"no {text!r} in {log!r}"
        await asyncio.sleep(0.3)
