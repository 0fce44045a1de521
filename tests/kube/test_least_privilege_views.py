"""A user's server on least privilege: alice's credentials are the test cluster's namespaced
role in ``alice`` plus the cluster reader (nodes, PriorityClasses, Volcano Queues, Kueue
ClusterQueues), and nothing else. She cannot list pods outside her namespace, yet her
server's VC view and hardware view answer, once per flavor, while bob runs a job in VC
``research``: its GPUs show in her VC view where the scheduler publishes a VC's use
cluster-wide (a Queue's ``status.allocated``, a ClusterQueue's ``flavorsReservation``,
HiveD's cells), never from a watch of bob's pods; and nothing of bob's job shows in her
hardware view."""

from __future__ import annotations

import asyncio

import pytest

from jupyter_pai.backends.kubernetes import KubernetesBackend
from jupyter_pai.backends.kubernetes.resources import POD
from jupyter_pai.backends.models import VirtualCluster
from jupyter_pai.spec import parse_job
from tests.cluster import kube
from tests.cluster.pytest_plugin import TestCluster
from tests.kube.test_backend_jobs import GPU_POOL, NS, _cleanup, make_backend
from tests.kube.test_cluster_rbac import _status

pytestmark = pytest.mark.kube
OTHER = "bob"
VC = "research"
GPUS = 2  # bob's job: two tasks of one GPU


def bobs_job(flavor: str) -> dict[str, object]:
    return {
        "protocolVersion": 2,
        # A name per flavor: the previous flavor's pods may still be going.
        "name": f"elsewhere-{flavor}",
        "type": "job",
        "defaults": {"virtualCluster": VC},
        "taskRoles": {
            "w": {
                "instances": GPUS,
                "resourcePerInstance": {"cpu": 1, "memoryMB": 512, "gpu": 1},
                "commands": ["sleep 600"],
            }
        },
    }


async def research(b: KubernetesBackend) -> VirtualCluster:
    found = {v.name: v for v in await b.virtual_clusters()}
    assert VC in found, found
    return found[VC]


async def test_views_answer_with_only_the_namespaced_role_and_cluster_reader(
    kube_cluster: TestCluster, flavor: str
) -> None:
    alice = kube.core(kube_cluster.api(NS))
    # What least privilege means here: no pod outside her namespace, not even to list.
    assert _status(lambda: alice.list_pod_for_all_namespaces()) == 403
    assert _status(lambda: alice.list_namespaced_pod(OTHER)) == 403
    assert _status(lambda: alice.list_namespaced_pod(NS)) == 200
    assert _status(lambda: alice.list_node()) == 200
    for ns in (NS, OTHER):
        _cleanup(kube_cluster, ns)
    mine = make_backend(kube_cluster, flavor, node_selector=GPU_POOL)
    theirs = make_backend(kube_cluster, flavor, user=OTHER, node_selector=GPU_POOL)
    await mine.start()
    await theirs.start()
    try:
        # Her server's watches: every namespaced one in her namespace; cluster-wide only
        # the flavor's VC kinds, and no pod watch among them.
        cluster_wide = set()
        for r in mine.cache.reflectors.values():
            assert r.healthy, (r.kind.plural, r.error)
            if r.kind.namespaced:
                assert r.namespace == NS, r.kind.plural
            else:
                cluster_wide.add(r.kind)
        assert cluster_wide == set(mine.scheduler_flavor.cluster_kinds)
        assert POD not in cluster_wide

        before = await research(mine)
        job = await theirs.submit(parse_job(bobs_job(flavor)).job)
        deadline = asyncio.get_running_loop().time() + 60
        while not all(t.node for t in (await theirs.get_job(job.id)).tasks):
            assert asyncio.get_running_loop().time() < deadline, "bob's job never ran"
            await asyncio.sleep(0.2)

        if flavor == "native":
            # A VC's cap is a ResourceQuota in each namespace: her share, untouched by bob's.
            while (seen := await research(theirs)).used.gpu != GPUS:  # the quota's status
                assert asyncio.get_running_loop().time() < deadline, seen
                await asyncio.sleep(0.3)
            after = await research(mine)
            assert after.used.gpu == before.used.gpu == 0
            assert after.capacity.gpu == 8
        else:
            # The scheduler publishes the VC's use cluster-wide: bob's GPUs count in her view.
            while (after := await research(mine)).used.gpu != before.used.gpu + GPUS:
                assert asyncio.get_running_loop().time() < deadline, (before, after)
                await asyncio.sleep(0.3)
            assert after.running_jobs == 0  # jobs counted are hers only

        # The hardware view: every node, none naming bob's job.
        nodes = await mine.nodes()
        assert {n.name for n in nodes} >= set(kube_cluster.gpu_nodes)
        assert not any(job.id in n.jobs for n in nodes)
        assert any(job.id in n.jobs for n in await theirs.nodes())

        # Each view is one API-server request (the nodes), whoever else runs jobs.
        requests = mine.rest.requests if mine.rest else 0
        await mine.virtual_clusters()
        await mine.nodes()
        assert mine.rest is not None and mine.rest.requests - requests == 2
    finally:
        await theirs.close()
        await mine.close()
        for ns in (NS, OTHER):
            _cleanup(kube_cluster, ns)
