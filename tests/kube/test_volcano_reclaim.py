"""OpenPAI's virtual clusters on Volcano: queues `a` and `b`, guaranteed 2 GPUs each, on a
pool of 4. A job in `a` borrows `b`'s idle GPUs; when `b` needs them, Volcano's `reclaim`
action (capacity plugin) evicts the borrower, whose job goes back to WAITING saying why
(not FAILED) and runs again once `b`'s job ends. jupyter-pai only reads: the queues as
VCs, the eviction as the reason."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from kubernetes.client.exceptions import ApiException

from jupyter_pai.backends.kubernetes.flavors.volcano_queues import queue_manifest
from jupyter_pai.backends.models import JobState
from jupyter_pai.spec import parse_job
from tests.cluster import kube, manifests
from tests.cluster.pytest_plugin import TestCluster

from .test_backend_jobs import NS, SLEEPER, _cleanup, make_backend, wait_for

pytestmark = pytest.mark.kube
POOL = "reclaim"


@pytest.fixture
def queues(kube_cluster: TestCluster) -> Iterator[None]:
    """Queues `a` and `b` (2 GPUs each, both borrow and lend) and a 4-GPU pool."""
    custom = kube.custom(kube_cluster.api())
    kube_cluster.add_nodes(manifests.NodeShape(pool=POOL, count=1, gpus=4))
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
    kube_cluster.remove_nodes(POOL)


async def test_a_borrower_is_preempted_for_the_lender_and_runs_again(
    kube_cluster: TestCluster, queues: None
) -> None:
    b = make_backend(kube_cluster, "volcano", node_selector={manifests.POOL_LABEL: POOL})
    await b.start()
    try:
        big = await b.submit(parse_job(SLEEPER.format(name="big", vc="a", n=2, gpu=2)).job)
        await wait_for(b, big.id, lambda d: d.state == JobState.RUNNING, 60)
        vcs = {v.name: v for v in await b.virtual_clusters()}
        a_vc, b_vc = vcs["a"], vcs["b"]
        assert (a_vc.guaranteed_gpus, a_vc.used.gpu, a_vc.borrowed_gpus) == (2, 4, 2)
        assert a_vc.may_borrow and a_vc.may_lend
        # Volcano counts the whole cluster's GPUs, most of them no queue's share: a's two
        # extra GPUs are on loan from those, so b lends nothing in this view.
        assert (b_vc.guaranteed_gpus, b_vc.used.gpu, b_vc.borrowed_gpus) == (2, 0, 0)

        submitted = time.monotonic()
        urgent = await b.submit(parse_job(SLEEPER.format(name="urgent", vc="b", n=1, gpu=2)).job)
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

        ended = time.monotonic()
        await b.stop_job(urgent.id)
        await wait_for(b, urgent.id, lambda d: d.state == JobState.STOPPED, 30)
        again = await wait_for(b, big.id, lambda d: d.state == JobState.RUNNING, 60)
        print(f"a's job ran again {time.monotonic() - ended:.1f} s after b's job ended")
        assert again.waiting_reason is None
    finally:
        await b.close()
