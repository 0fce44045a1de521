"""Gang scheduling and virtual-cluster quotas on the real scheduler (simulated GPU nodes)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from tests.cluster import kube, manifests
from tests.cluster.pytest_plugin import TestCluster

from .workloads import bound, delete_job, indexed_job, job_pods, wait_for

pytestmark = pytest.mark.kube
NS = "default"


@pytest.fixture
def pool(kube_cluster: TestCluster, request: pytest.FixtureRequest) -> Iterator[str]:
    """A private pool of 4 nodes x 8 GPUs, so tests do not see each other's pods."""
    name = request.node.name.replace("_", "-")[-40:].strip("-").lower()
    kube_cluster.add_nodes(manifests.NodeShape(pool=name, count=4, gpus=8))
    yield name
    kube_cluster.remove_nodes(name)


def test_gang_job_is_bound_whole(kube_cluster: TestCluster, pool: str) -> None:
    api = kube_cluster.api()
    core, batch = kube.core(api), kube.batch(api)
    batch.create_namespaced_job(NS, indexed_job("gang-4x2", 4, 2, pool))
    try:
        wait_for(lambda: bound(job_pods(core, NS, "gang-4x2")) == 4, 30, "4 pods bound")
        pods = job_pods(core, NS, "gang-4x2")
        # The Job controller made a gang PodGroup and put every pod in it.
        groups = {p.spec.scheduling_group.pod_group_name for p in pods}
        assert len(groups) == 1
        group = kube.custom(api).get_namespaced_custom_object(
            "scheduling.k8s.io", "v1alpha2", NS, "podgroups", groups.pop()
        )
        assert group["spec"]["schedulingPolicy"]["gang"]["minCount"] == 4
        assert all(p.spec.node_name.startswith(pool) for p in pods)
        wait_for(
            lambda: all(p.status.phase == "Running" for p in job_pods(core, NS, "gang-4x2")),
            30,
            "kwok runs the pods",
        )
    finally:
        delete_job(api, NS, "gang-4x2")


def test_gang_that_cannot_fit_waits_then_starts(kube_cluster: TestCluster, pool: str) -> None:
    api = kube_cluster.api()
    core, batch = kube.core(api), kube.batch(api)
    # 3 of the 4 nodes full: 8 GPUs free, the gang needs 4 x 4 = 16.
    batch.create_namespaced_job(NS, indexed_job("blocker", 3, 8, pool))
    try:
        wait_for(lambda: bound(job_pods(core, NS, "blocker")) == 3, 30, "blocker bound")
        batch.create_namespaced_job(NS, indexed_job("waiter", 4, 4, pool))
        wait_for(lambda: len(job_pods(core, NS, "waiter")) == 4, 30, "waiter pods created")
        deadline = time.monotonic() + 8
        while time.monotonic() < deadline:  # partial placement (2 pods) would fit; none may
            assert bound(job_pods(core, NS, "waiter")) == 0
            time.sleep(0.2)
        # The gang waits as a whole, and says so on its PodGroup.
        group_name = job_pods(core, NS, "waiter")[0].spec.scheduling_group.pod_group_name
        group = kube.custom(api).get_namespaced_custom_object(
            "scheduling.k8s.io", "v1alpha2", NS, "podgroups", group_name
        )
        conditions = {c["type"]: c for c in group["status"]["conditions"]}
        assert conditions["PodGroupScheduled"]["status"] == "False"
        assert conditions["PodGroupScheduled"]["reason"] == "Unschedulable"
        delete_job(api, NS, "blocker")
        wait_for(
            lambda: bound(job_pods(core, NS, "waiter")) == 4,
            60,
            "the gang starts once capacity frees",
        )
    finally:
        delete_job(api, NS, "blocker")
        delete_job(api, NS, "waiter")


def test_job_over_vc_quota_waits_while_default_has_room(
    kube_cluster: TestCluster, pool: str
) -> None:
    api = kube_cluster.api()
    core, batch = kube.core(api), kube.batch(api)
    quota = manifests.VIRTUAL_CLUSTERS["research"]
    assert quota is not None and quota < 16
    research = indexed_job("in-research", 4, 4, pool, priority_class="vc-research")
    default = indexed_job("in-default", 4, 4, pool, priority_class="vc-default")
    batch.create_namespaced_job(NS, research)
    batch.create_namespaced_job(NS, default)
    try:
        wait_for(
            lambda: bound(job_pods(core, NS, "in-default")) == 4, 30, "the default VC job runs"
        )
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            assert bound(job_pods(core, NS, "in-research")) == 0
            time.sleep(0.2)
        used = core.read_namespaced_resource_quota("vc-research", NS).status.used
        assert int(used[f"requests.{manifests.GPU_RESOURCE}"]) <= quota
        events = core.list_namespaced_event(
            NS, field_selector="involvedObject.name=in-research"
        ).items
        assert any("exceeded quota" in (e.message or "") for e in events)
    finally:
        delete_job(api, NS, "in-research")
        delete_job(api, NS, "in-default")
