"""A job's GPU type held by the scheduler on the real test cluster, per flavor: gpu-0 and
gpu-1 are A100-40GB nodes, gpu-2 and gpu-3 H100-80GB ones (GPU Feature Discovery's labels,
``tests/cluster/manifests.py``). native, volcano and kueue place a type by node affinity
(``gpu_placement``); hived by HiveD's SKU."""

from __future__ import annotations

import asyncio
import contextlib
import copy
import time
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client

from jupyter_pai.backends.kubernetes import KubernetesBackend
from jupyter_pai.backends.kubernetes.naming import LABEL_JOB, JobNames
from jupyter_pai.backends.models import JobState
from jupyter_pai.errors import SpecError
from jupyter_pai.spec import parse_job
from jupyter_pai.spec.protocol import JobProtocol
from tests.cluster import hived as cluster_hived
from tests.cluster import manifests
from tests.cluster.pytest_plugin import TestCluster
from tests.kube.test_backend_jobs import GPU_POOL, NS, OWNED, _cleanup, make_backend, wait_for

pytestmark = pytest.mark.kube
A100_NODES = {"gpu-0", "gpu-1"}
MIG_POOL = "mig-mixed"
MIG_RESOURCE = "nvidia.com/mig-1g.5gb"
MIG = manifests.NodeShape(
    pool=MIG_POOL,
    count=1,
    gpus=0,
    labels={**manifests.A100_40GB, "nvidia.com/mig.strategy": "mixed"},
    extended={MIG_RESOURCE: "7"},
)


@pytest.fixture(params=("native", "volcano", "kueue"))
def placing(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def typed(name: str, gpus: str, *, instances: int = 1, vc: str = "default") -> JobProtocol:
    doc: dict[str, Any] = {
        "name": name,
        "image": "python:3.11-slim",
        "command": ["sleep", "300"],
        "gpus": gpus,
        "instances": instances,
        "vc": vc,
    }
    return parse_job(doc).job


def pods_of(b: KubernetesBackend, cluster: TestCluster, job_id: str) -> list[Any]:
    primary = b.views.primary(job_id)
    base = JobNames.from_annotations(primary["metadata"]["annotations"]).base
    core = client.CoreV1Api(cluster.api())
    return core.list_namespaced_pod(NS, label_selector=f"{LABEL_JOB}={base}").items


def owned_left(cluster: TestCluster) -> list[str]:
    api = cluster.api()
    core, batch = client.CoreV1Api(api), client.BatchV1Api(api)
    custom = client.CustomObjectsApi(api)
    left = [
        f"ConfigMap/{c.metadata.name}"
        for c in core.list_namespaced_config_map(NS, label_selector=OWNED).items
    ]
    left += [
        f"Pod/{p.metadata.name}" for p in core.list_namespaced_pod(NS, label_selector=OWNED).items
    ]
    left += [
        f"Secret/{s.metadata.name}"
        for s in core.list_namespaced_secret(NS, label_selector=OWNED).items
    ]
    left += [
        f"Job/{j.metadata.name}" for j in batch.list_namespaced_job(NS, label_selector=OWNED).items
    ]
    for group, version, plural in (
        ("batch.volcano.sh", "v1alpha1", "jobs"),
        ("jobset.x-k8s.io", "v1alpha2", "jobsets"),
    ):
        items = custom.list_namespaced_custom_object(group, version, NS, plural)["items"]
        left += [f"{plural}/{o['metadata']['name']}" for o in items]
    return left


async def started(cluster: TestCluster, flavor: str, **kw: Any) -> KubernetesBackend:
    _cleanup(cluster, NS)
    kw.setdefault("node_selector", GPU_POOL)
    b = make_backend(cluster, flavor, **kw)
    await b.start()
    return b


async def test_a_typed_job_runs_only_on_its_type_and_the_vc_view_counts_it(
    kube_cluster: TestCluster, placing: str
) -> None:
    b = await started(kube_cluster, placing)
    try:
        assert b.places_gpu_types
        assert b.submission_warnings(typed("a100", "A100-40GB:2")) == []
        before = {v.name: v for v in await b.virtual_clusters()}
        counts = {t.name: (t.capacity, t.used, t.free) for t in before["default"].gpu_types}
        assert counts["A100-40GB"] == (16, 0, 16) and counts["H100-80GB"] == (16, 0, 16)
        a100 = {t.name: t for t in before["research"].gpu_types}["A100-40GB"]
        assert a100.product == "NVIDIA-A100-SXM4-40GB"  # every VC sees the cluster's types
        job = await b.submit(typed("a100", "A100-40GB:2", instances=4))
        await wait_for(b, job.id, lambda d: d.state == JobState.RUNNING)
        pods = pods_of(b, kube_cluster, job.id)
        assert len(pods) == 4 and {p.spec.node_name for p in pods} <= A100_NODES
        for pod in pods:
            terms = (
                pod.spec.affinity.node_affinity.required_during_scheduling_ignored_during_execution
            )
            [expr] = terms.node_selector_terms[0].match_expressions
            assert (expr.key, expr.values) == ("nvidia.com/gpu.product", ["NVIDIA-A100-SXM4-40GB"])
            assert pod.spec.node_selector == GPU_POOL  # the backend's own, kept
        after = {v.name: v for v in await b.virtual_clusters()}
        counts = {t.name: (t.capacity, t.used, t.free) for t in after["default"].gpu_types}
        assert counts["A100-40GB"] == (16, 8, 8) and counts["H100-80GB"] == (16, 0, 16)
    finally:
        await b.close()
        _cleanup(kube_cluster, NS)


async def test_an_impossible_type_is_a_400_naming_the_field(
    kube_cluster: TestCluster, placing: str
) -> None:
    b = await started(kube_cluster, placing)
    try:
        with pytest.raises(SpecError) as caught:
            await b.submit(typed("v100", "V100-32GB:1"))
        [error] = caught.value.errors
        assert error.path == "extras.hivedScheduler.taskRoles.worker.skuType"
        assert "no GPU type 'V100-32GB'" in error.message
        assert "A100-40GB (16 GPUs)" in error.message and "H100-80GB (16 GPUs)" in error.message
        assert await b.list_jobs() == []
        assert owned_left(kube_cluster) == []
    finally:
        await b.close()
        _cleanup(kube_cluster, NS)


async def test_a_type_whose_nodes_are_full_waits_naming_it(
    kube_cluster: TestCluster, placing: str
) -> None:
    b = await started(kube_cluster, placing)
    try:
        full = await b.submit(typed("fill", "A100-40GB:8", instances=2))
        await wait_for(b, full.id, lambda d: d.state == JobState.RUNNING)
        # H100s are free, and still the job waits: it asked for an A100.
        more = await b.submit(typed("more", "A100-40GB:2", vc="research"))
        reason = "waiting for 2 A100-40GB in VC research: 0 of 16 free"
        waiting = await wait_for(b, more.id, lambda d: d.waiting_reason == reason, 30)
        assert waiting.state == JobState.WAITING
        assert all(p.spec.node_name is None for p in pods_of(b, kube_cluster, more.id))
        await b.stop_job(full.id)
        await wait_for(b, more.id, lambda d: d.state == JobState.RUNNING, 60)
        assert {p.spec.node_name for p in pods_of(b, kube_cluster, more.id)} <= A100_NODES
    finally:
        await b.close()
        _cleanup(kube_cluster, NS)


@contextlib.contextmanager
def mig_quota(cluster: TestCluster, flavor: str) -> Iterator[None]:
    """kueue: the VC's ClusterQueue covers the slice resource while the test runs, as an
    admin adds it (Kueue admits only resources a ClusterQueue covers; without it the job
    waits with "resource nvidia.com/mig-1g.5gb unavailable in ClusterQueue")."""
    if flavor != "kueue":
        yield
        return
    custom = client.CustomObjectsApi(cluster.api())
    where = ("kueue.x-k8s.io", "v1beta2", "clusterqueues", "default")
    kept = custom.get_cluster_custom_object(*where)["spec"]["resourceGroups"]
    # A flavor is in one resource group only: the slice joins the GPUs' group.
    [group] = copy.deepcopy(kept)
    group["coveredResources"].append(MIG_RESOURCE)
    group["flavors"][0]["resources"].append({"name": MIG_RESOURCE, "nominalQuota": "7"})
    patch = {"spec": {"resourceGroups": [group]}}
    custom.patch_cluster_custom_object(*where, patch)
    try:
        yield
    finally:
        custom.patch_cluster_custom_object(*where, {"spec": {"resourceGroups": kept}})


async def test_a_mixed_mig_node_runs_a_job_asking_for_its_slice(
    kube_cluster: TestCluster, placing: str
) -> None:
    with contextlib.ExitStack() as stack:
        kube_cluster.add_nodes(MIG)
        stack.callback(kube_cluster.remove_nodes, MIG_POOL)
        stack.enter_context(mig_quota(kube_cluster, placing))
        b = await started(kube_cluster, placing, node_selector={manifests.POOL_LABEL: MIG_POOL})
        try:
            job = await b.submit(typed("mig", "A100-40GB-MIG-1g.5gb:1"))
            await wait_for(b, job.id, lambda d: d.state == JobState.RUNNING)
            [pod] = pods_of(b, kube_cluster, job.id)
            assert pod.spec.node_name == "mig-mixed-0"
            limits = pod.spec.containers[0].resources.limits
            assert limits[MIG_RESOURCE] == "1" and "nvidia.com/gpu" not in limits
            vcs = {v.name: v for v in await b.virtual_clusters()}
            mig = {t.name: t for t in vcs["default"].gpu_types}["A100-40GB-MIG-1g.5gb"]
            assert (mig.capacity, mig.used, mig.free) == (7, 1, 6)
        finally:
            await b.close()
            _cleanup(kube_cluster, NS)


# -- hived: the type is HiveD's SKU -------------------------------------------------------


async def test_hived_refuses_a_sku_its_vc_lacks_and_counts_its_skus(
    kube_cluster: TestCluster,
) -> None:
    """test_cluster_hived runs jobs naming the test cluster's SKU; here the type angle."""
    b = await started(kube_cluster, "hived")
    try:
        assert b.places_gpu_types
        with pytest.raises(SpecError) as caught:
            await b.submit(typed("a100", "A100-40GB:1"))
        [error] = caught.value.errors
        assert error.path == "extras.hivedScheduler.taskRoles.worker.skuType"
        assert f"its GPU types: {cluster_hived.SKU} (" in error.message
        assert owned_left(kube_cluster) == []
        job = await b.submit(typed("dt", f"{cluster_hived.SKU}:2"))
        await wait_for(b, job.id, lambda d: d.state == JobState.RUNNING)
        deadline = time.monotonic() + 10  # HiveD's answer is reused for 2 s
        while True:
            vcs = {v.name: v for v in await b.virtual_clusters()}
            [sku] = vcs["default"].gpu_types
            if sku.used == 2 or time.monotonic() > deadline:
                break
            await asyncio.sleep(0.5)
        assert sku.name == cluster_hived.SKU
        assert (sku.capacity, sku.used) == (vcs["default"].capacity.gpu, 2)
    finally:
        await b.close()
        _cleanup(kube_cluster, NS)


# -- shared GPUs (time-slicing): a type of its own, counted in replicas ------------------

SHARED_POOL = "t4-shared"
SHARED = manifests.NodeShape(
    pool=SHARED_POOL,
    count=1,
    gpus=8,  # 2 GPUs shared 4 ways: the device plugin advertises 8
    labels={
        "nvidia.com/gpu.product": "Tesla-T4-SHARED",
        "nvidia.com/gpu.memory": "15360",
        "nvidia.com/gpu.count": "2",
        "nvidia.com/gpu.replicas": "4",
        "nvidia.com/gpu.sharing-strategy": "time-slicing",
    },
)


async def test_a_shared_gpu_node_is_a_type_of_its_own(kube_cluster: TestCluster) -> None:
    with contextlib.ExitStack() as stack:
        kube_cluster.add_nodes(SHARED)
        stack.callback(kube_cluster.remove_nodes, SHARED_POOL)
        b = await started(kube_cluster, "native", node_selector={})
        try:
            job = await b.submit(typed("shared", "T4-SHARED:1"))
            await wait_for(b, job.id, lambda d: d.state == JobState.RUNNING)
            [pod] = pods_of(b, kube_cluster, job.id)
            assert pod.spec.node_name == "t4-shared-0"
            vcs = {v.name: v for v in await b.virtual_clusters()}
            shared = {t.name: t for t in vcs["default"].gpu_types}["T4-SHARED"]
            assert (shared.capacity, shared.used, shared.free) == (8, 1, 7)
            assert shared.product == "Tesla-T4-SHARED"
        finally:
            await b.close()
            _cleanup(kube_cluster, NS)
