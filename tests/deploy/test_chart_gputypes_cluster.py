"""The chart's per-GPU-type quotas held by the test cluster's Kueue and Volcano. Kueue: a VC rendered with
`A100-40GB: 2, H100-80GB: 2` admits an H100 job of 2 GPUs, keeps a second one waiting on
the H100 flavor's quota (its Workload not admitted, Kueue naming the flavor), and still
admits an A100 job of 2, each on its type's nodes (gpu-0/1 A100-40GB, gpu-2/3 H100-80GB).
Volcano: a queue per type, the same jobs each in its type's queue. Jobs go through the
backend, as a user's server submits them."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from jupyter_pai.backends.kubernetes import KubernetesBackend
from jupyter_pai.backends.kubernetes.naming import LABEL_JOB, JobNames
from jupyter_pai.backends.models import JobState
from jupyter_pai.errors import SpecError
from jupyter_pai.spec import parse_job
from tests.cluster import kube
from tests.cluster import kueue as cluster_kueue
from tests.cluster.pytest_plugin import TestCluster
from tests.kube.test_backend_jobs import GPU_POOL, NS, _cleanup, make_backend, wait_for

from .chart import Manifest, flavor_values, objects, template
from .test_chart_gputypes import GPU_TYPES

pytestmark = pytest.mark.kube
GROUP, VERSION = "kueue.x-k8s.io", "v1beta2"
A100_NODES, H100_NODES = {"gpu-0", "gpu-1"}, {"gpu-2", "gpu-3"}
A100_FLAVOR, H100_FLAVOR = "gpu-a100-40gb", "gpu-h100-80gb"


@pytest.fixture
def typed_vc(kube_cluster: TestCluster) -> Iterator[str]:
    """The chart's typed ResourceFlavors and the ClusterQueue of a VC of 2 A100s and 2
    H100s (a name and cohort of its own, so the test cluster's VCs are untouched), with
    its LocalQueue in alice's namespace as the hub would make it."""
    vc = f"typed-{uuid.uuid4().hex[:6]}"
    values = flavor_values("kueue")
    values["gpuTypes"] = GPU_TYPES
    values["virtualClusters"] = {vc: {"gpuTypes": {"A100-40GB": 2, "H100-80GB": 2}}}
    values["openVirtualClusters"] = [vc]
    values["kueue"] = {"cohort": vc, "resourceFlavor": "gpu"}
    docs = objects(template(values))
    flavors = [d for d in docs if d["kind"] == "ResourceFlavor" and d["metadata"]["name"] != "gpu"]
    # values.yaml's `default` VC is rendered too (values merge): only this VC's is applied.
    queue = [d for d in docs if d["kind"] == "ClusterQueue" and d["metadata"]["name"] == vc]
    assert sorted(f["metadata"]["name"] for f in flavors) == [A100_FLAVOR, H100_FLAVOR]
    assert len(queue) == 1
    api = kube_cluster.api()
    _cleanup(kube_cluster, NS)
    kube.apply(api, [*flavors, *queue, cluster_kueue.local_queue(vc, NS)])
    try:
        yield vc
    finally:
        _cleanup(kube_cluster, NS)
        custom = kube.custom(api)
        _gone(lambda: custom.delete_namespaced_custom_object(GROUP, VERSION, NS, "localqueues", vc))
        # Kueue's finalizer keeps the ClusterQueue while Workloads are admitted in it.
        deadline = time.monotonic() + 30
        while True:
            try:
                custom.get_cluster_custom_object(GROUP, VERSION, "clusterqueues", vc)
                custom.delete_cluster_custom_object(GROUP, VERSION, "clusterqueues", vc)
            except ApiException as error:
                if error.status == 404:
                    break
                raise
            assert time.monotonic() < deadline, f"ClusterQueue {vc} not deleted"
            time.sleep(0.5)
        for flavor in flavors:
            _gone(
                lambda name=flavor["metadata"]["name"]: custom.delete_cluster_custom_object(
                    GROUP, VERSION, "resourceflavors", name
                )
            )


def _gone(delete: Any) -> None:
    try:
        delete()
    except ApiException as error:
        if error.status != 404:
            raise


def _job(name: str, gpus: str, vc: str) -> Any:
    doc = {
        "name": name,
        "image": "python:3.11-slim",
        "command": ["sleep", "300"],
        "gpus": gpus,
        "vc": vc,
    }
    return parse_job(doc).job


def _base(b: KubernetesBackend, job_id: str) -> str:
    primary = b.views.primary(job_id)
    return JobNames.from_annotations(primary["metadata"]["annotations"]).base


def _workload(cluster: TestCluster, base: str, timeout: float = 30) -> Manifest:
    """The job's Workload (owned by its JobSet), once Kueue has made it and said whether it
    reserved quota."""
    custom: Any = client.CustomObjectsApi(cluster.api())
    deadline = time.monotonic() + timeout
    while True:
        items = custom.list_namespaced_custom_object(GROUP, VERSION, NS, "workloads")["items"]
        found = [
            w
            for w in items
            if any(o["name"] == base for o in w["metadata"].get("ownerReferences") or [])
        ]
        conditions = {
            c["type"] for w in found for c in (w.get("status") or {}).get("conditions") or []
        }
        if found and "QuotaReserved" in conditions:
            assert len(found) == 1, found
            return dict(found[0])
        assert time.monotonic() < deadline, f"no Workload with a quota decision for {base}"
        time.sleep(0.5)


def _condition(workload: Manifest, kind: str) -> dict[str, Any]:
    for c in (workload.get("status") or {}).get("conditions") or []:
        if c["type"] == kind:
            return dict(c)
    return {}


def _flavor(workload: Manifest) -> str:
    [assignment] = workload["status"]["admission"]["podSetAssignments"]
    return str(assignment["flavors"]["nvidia.com/gpu"])


def _nodes(cluster: TestCluster, base: str) -> set[str]:
    core: Any = client.CoreV1Api(cluster.api())
    pods = core.list_namespaced_pod(NS, label_selector=f"{LABEL_JOB}={base}").items
    return {str(p.spec.node_name) for p in pods}


async def test_kueue_holds_a_quota_per_gpu_type(kube_cluster: TestCluster, typed_vc: str) -> None:
    b = make_backend(kube_cluster, "kueue", node_selector=GPU_POOL)
    await b.start()
    try:
        vcs = {v.name: v for v in await b.virtual_clusters()}
        assert vcs[typed_vc].guaranteed_gpus == 4  # 2 + 2, the flavors' quotas summed

        first = await b.submit(_job("h100-first", "H100-80GB:2", typed_vc))
        await wait_for(b, first.id, lambda d: d.state == JobState.RUNNING, 60)
        first_base = _base(b, first.id)
        assert _flavor(_workload(kube_cluster, first_base)) == H100_FLAVOR
        assert _nodes(kube_cluster, first_base) <= H100_NODES

        # The VC has 2 GPUs unused, but they are A100 quota: the second H100 job waits.
        second = await b.submit(_job("h100-second", "H100-80GB:2", typed_vc))
        second_base = _base(b, second.id)
        workload = _workload(kube_cluster, second_base)
        reserved = _condition(workload, "QuotaReserved")
        print(f"\nsecond H100 job's Workload: {reserved.get('message')}")
        assert reserved["status"] == "False"
        assert _condition(workload, "Admitted").get("status") != "True"
        assert f"insufficient unused quota for nvidia.com/gpu in flavor {H100_FLAVOR}" in str(
            reserved["message"]
        ), reserved
        # The backend's reason comes from the Workload, once its watch has it.
        waiting = await wait_for(b, second.id, lambda d: "flavor" in (d.waiting_reason or ""), 30)
        assert waiting.waiting_reason is not None and waiting.waiting_reason.startswith(
            "waiting for 2 H100-80GB in ClusterQueue"
        ), waiting.waiting_reason
        assert "flavor gpu-h100-80gb is in use" in waiting.waiting_reason
        assert waiting.state == JobState.WAITING
        assert not _nodes(kube_cluster, second_base)

        # The A100 quota is still there for an A100 job.
        a100 = await b.submit(_job("a100", "A100-40GB:2", typed_vc))
        await wait_for(b, a100.id, lambda d: d.state == JobState.RUNNING, 60)
        a100_base = _base(b, a100.id)
        assert _flavor(_workload(kube_cluster, a100_base)) == A100_FLAVOR
        assert _nodes(kube_cluster, a100_base) <= A100_NODES

        # And the second H100 job still waits: the whole VC's 4 GPUs are now in use.
        workload = _workload(kube_cluster, second_base)
        assert _condition(workload, "QuotaReserved")["status"] == "False"
        assert (await b.get_job(second.id)).state == JobState.WAITING
    finally:
        await b.close()


VOLCANO_QUEUES = ("scheduling.volcano.sh", "v1beta1", "queues")


@pytest.fixture
def volcano_typed_vc(kube_cluster: TestCluster) -> Iterator[str]:
    """The chart's queues of a Volcano VC of 2 A100s and 2 H100s (a queue per type, held
    to its share: borrow and lend off), named for this test so the cluster's VCs stay."""
    vc = f"typed-{uuid.uuid4().hex[:6]}"
    values = flavor_values("volcano")
    values["gpuTypes"] = GPU_TYPES
    values["virtualClusters"] = {
        vc: {"gpuTypes": {"A100-40GB": 2, "H100-80GB": 2}, "borrow": False, "lend": False}
    }
    values["openVirtualClusters"] = [vc]
    docs = objects(template(values))
    queues = [
        d for d in docs if d["kind"] == "Queue" and d["metadata"]["name"].startswith(f"{vc}-")
    ]
    assert sorted(q["metadata"]["name"] for q in queues) == [f"{vc}-a100-40gb", f"{vc}-h100-80gb"]
    api = kube_cluster.api()
    _cleanup(kube_cluster, NS)
    kube.apply(api, queues)
    try:
        yield vc
    finally:
        _cleanup(kube_cluster, NS)
        custom = kube.custom(api)
        for q in queues:
            deadline = time.monotonic() + 30
            while True:  # a queue is refused deletion while it holds jobs' pod groups
                try:
                    custom.delete_cluster_custom_object(*VOLCANO_QUEUES, q["metadata"]["name"])
                    break
                except ApiException as error:
                    if error.status == 404:
                        break
                    assert time.monotonic() < deadline, error.body
                    time.sleep(0.5)


def _vcjob_queue(cluster: TestCluster, base: str) -> str:
    custom: Any = client.CustomObjectsApi(cluster.api())
    job = custom.get_namespaced_custom_object("batch.volcano.sh", "v1alpha1", NS, "jobs", base)
    return str(job["spec"]["queue"])


async def test_volcano_holds_a_quota_per_gpu_type(
    kube_cluster: TestCluster, volcano_typed_vc: str
) -> None:
    vc = volcano_typed_vc
    b = make_backend(kube_cluster, "volcano", node_selector=GPU_POOL)
    await b.start()
    try:
        vcs = {v.name: v for v in await b.virtual_clusters()}
        # One VC, not two queues: its types as rows, each its queue's share.
        assert f"{vc}-a100-40gb" not in vcs and f"{vc}-h100-80gb" not in vcs
        assert vcs[vc].guaranteed_gpus == 4
        rows = {t.name: (t.capacity, t.used, t.free) for t in vcs[vc].gpu_types}
        assert rows == {"A100-40GB": (2, 0, 2), "H100-80GB": (2, 0, 2)}

        # A job of the VC asking GPUs of no type is refused, naming the field and types.
        with pytest.raises(SpecError) as refused:
            await b.submit(_job("untyped", "2", vc))
        [error] = refused.value.errors
        assert error.path.endswith(".skuType")
        assert f"virtual cluster {vc} holds its GPUs per type (A100-40GB, H100-80GB)" in (
            error.message
        )

        first = await b.submit(_job("h100-first", "H100-80GB:2", vc))
        await wait_for(b, first.id, lambda d: d.state == JobState.RUNNING, 60)
        first_base = _base(b, first.id)
        assert _vcjob_queue(kube_cluster, first_base) == f"{vc}-h100-80gb"
        assert _nodes(kube_cluster, first_base) <= H100_NODES

        # The VC has 2 GPUs unused, but they are the A100 queue's: the second H100 job
        # waits in its type's queue, saying so.
        second = await b.submit(_job("h100-second", "H100-80GB:2", vc))
        waiting = await wait_for(
            b, second.id, lambda d: "H100-80GB" in (d.waiting_reason or ""), 30
        )
        print(f"\nsecond H100 job: {waiting.waiting_reason}")
        assert waiting.state == JobState.WAITING
        assert waiting.waiting_reason == f"waiting for 2 H100-80GB in VC {vc}: 0 of 2 free"
        assert not _nodes(kube_cluster, _base(b, second.id))

        # The A100 share is still there for an A100 job.
        a100 = await b.submit(_job("a100", "A100-40GB:2", vc))
        await wait_for(b, a100.id, lambda d: d.state == JobState.RUNNING, 60)
        a100_base = _base(b, a100.id)
        assert _vcjob_queue(kube_cluster, a100_base) == f"{vc}-a100-40gb"
        assert _nodes(kube_cluster, a100_base) <= A100_NODES

        vcs = {v.name: v for v in await b.virtual_clusters()}
        rows = {t.name: (t.capacity, t.used, t.free) for t in vcs[vc].gpu_types}
        assert rows == {"A100-40GB": (2, 2, 0), "H100-80GB": (2, 2, 0)}
        assert vcs[vc].running_jobs == 2 and vcs[vc].queued_jobs == 1
        assert (await b.get_job(second.id)).state == JobState.WAITING

        # The first H100 job stopped, the second runs in its place.
        await b.stop_job(first.id)
        await wait_for(b, second.id, lambda d: d.state == JobState.RUNNING, 90)
    finally:
        await b.close()
