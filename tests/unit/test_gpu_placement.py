"""Placing a role on its GPU type (gpu_placement): the test cluster's nodes (A100-40GB and
H100-80GB, a mixed-MIG node) in, the pods' node affinity and resources out, per flavor
that asks kube-scheduler, Volcano or Kueue for nodes; an unknown type is a field error; a
job without a type builds as before; the counts behind the VC view and waiting reasons."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from jupyter_pai.backends.gputypes import cluster_gpu_types
from jupyter_pai.backends.kubernetes import gpu_placement
from jupyter_pai.backends.kubernetes.flavors import FLAVORS, HivedSettings
from jupyter_pai.backends.kubernetes.flavors.hived_cells import vc_cells
from jupyter_pai.backends.kubernetes.naming import make_names
from jupyter_pai.backends.kubernetes.pods import PodOptions
from jupyter_pai.errors import SpecError
from jupyter_pai.spec import parse_job
from jupyter_pai.spec.protocol import JobProtocol
from tests.cluster import manifests
from tests.golden import check_golden

GOLDEN = Path(__file__).parent / "golden" / "gpu_placement"
PLACING = ("kueue", "native", "volcano")
MIG = manifests.NodeShape(
    pool="mig",
    count=1,
    gpus=0,
    labels={**manifests.A100_40GB, "nvidia.com/mig.strategy": "mixed"},
    extended={"nvidia.com/mig-1g.5gb": "7"},
)
NODES = [
    *manifests.nodes(manifests.DEFAULT_GPU_POOL),
    *manifests.nodes(manifests.DEFAULT_RUNNER_POOL, runner=True),
    *manifests.nodes(MIG),
]
TYPES = gpu_placement.choosable(cluster_gpu_types(NODES))
OPTIONS = PodOptions(namespace="alice", node_selector={"jupyter-pai.test/pool": "gpu"})


def _job(gpus: Any, instances: int = 1) -> JobProtocol:
    doc = {"name": "t", "image": "python:3.11", "command": ["echo"], "gpus": gpus}
    if instances > 1:
        doc["instances"] = instances
    return parse_job(doc).job


def _pod_specs(obj: Any) -> Iterator[dict[str, Any]]:
    """Every pod spec in a flavor's objects (Jobs, vcjob tasks, JobSet replicas, pods)."""
    if isinstance(obj, dict):
        if "containers" in obj:
            yield obj
        for value in obj.values():
            yield from _pod_specs(value)
    elif isinstance(obj, list):
        for value in obj:
            yield from _pod_specs(value)


def _placement(flavor: str, job: JobProtocol, types: Any = TYPES) -> list[dict[str, Any]]:
    settings = HivedSettings(cpu_sku="CPU") if flavor == "hived" else None
    built = FLAVORS[flavor](OPTIONS, settings).build_typed(job, make_names(job, "alice"), types)
    return [
        {
            "affinity": spec.get("affinity"),
            "nodeSelector": spec.get("nodeSelector"),
            "resources": spec["containers"][0]["resources"],
        }
        for spec in _pod_specs(built.objects)
    ]


def test_the_test_clusters_types() -> None:
    found = {t.name: (t.nodes, t.capacity, t.gpu_type.resource) for t in TYPES.values()}
    assert found == {
        "A100-40GB": (("gpu-0", "gpu-1"), 16, "nvidia.com/gpu"),
        "H100-80GB": (("gpu-2", "gpu-3"), 16, "nvidia.com/gpu"),
        "A100-40GB-MIG-1g.5gb": (("mig-0",), 7, "nvidia.com/mig-1g.5gb"),
    }


@pytest.mark.parametrize("flavor", PLACING)
def test_golden_placement(flavor: str) -> None:
    got = {
        request: _placement(flavor, _job(request, instances=2))
        for request in ("A100-40GB:2", "H100-80GB:8", "A100-40GB-MIG-1g.5gb:1")
    }
    text = json.dumps(got, indent=1, sort_keys=True) + "\n"
    check_golden(GOLDEN / f"{flavor}.json", text, json.loads)


@pytest.mark.parametrize("flavor", PLACING)
def test_a_mixed_mig_type_asks_for_its_slice_on_its_product(flavor: str) -> None:
    [pod] = _placement(flavor, _job("A100-40GB-MIG-1g.5gb:1"))
    assert pod["resources"]["limits"]["nvidia.com/mig-1g.5gb"] == "1"
    assert "nvidia.com/gpu" not in pod["resources"]["limits"]
    term = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert term["nodeSelectorTerms"] == [
        {
            "matchExpressions": [
                {
                    "key": "nvidia.com/gpu.product",
                    "operator": "In",
                    "values": ["NVIDIA-A100-SXM4-40GB"],
                }
            ]
        }
    ]
    assert pod["nodeSelector"] == {"jupyter-pai.test/pool": "gpu"}  # both hold


@pytest.mark.parametrize("flavor", sorted(FLAVORS))
def test_a_job_without_a_type_builds_as_before(flavor: str) -> None:
    job = _job(2, instances=2)
    assert _placement(flavor, job, TYPES) == _placement(flavor, job, None)
    assert all(p["affinity"] is None for p in _placement(flavor, job, TYPES))


def test_hived_leaves_the_type_to_hived() -> None:
    """HiveD's SKU is the type: its pods ask for no GPU resource and get no affinity."""
    job = _job("A100-40GB:2")
    assert _placement("hived", job, TYPES) == _placement("hived", job, None)


@pytest.mark.parametrize("flavor", PLACING)
def test_an_unknown_type_is_a_field_error_listing_the_clusters(flavor: str) -> None:
    with pytest.raises(SpecError) as caught:
        gpu_placement.resolve(_job("V100-32GB:1"), TYPES.values())
    [error] = caught.value.errors
    assert error.path == "extras.hivedScheduler.taskRoles.worker.skuType"
    assert error.message == (
        "the cluster has no GPU type 'V100-32GB'; its GPU types: A100-40GB (16 GPUs), "
        "A100-40GB-MIG-1g.5gb (7 GPUs), H100-80GB (16 GPUs)"
    )
    with pytest.raises(SpecError, match="V100-32GB"):  # the builder refuses it too
        _placement(flavor, _job("V100-32GB:1"))


def test_the_runners_unlabelled_gpus_cannot_be_chosen() -> None:
    every = cluster_gpu_types(NODES)
    assert "unknown" in {t.name for t in every}
    with pytest.raises(SpecError, match="no GPU type 'unknown'"):
        gpu_placement.resolve(_job("unknown:1"), every)


def test_a_time_sliced_type_is_pinned_to_its_shared_product() -> None:
    shared = manifests.NodeShape(
        pool="t4",
        count=1,
        gpus=16,
        labels={"nvidia.com/gpu.product": "Tesla-T4-SHARED", "nvidia.com/gpu.replicas": "4"},
    )
    types = gpu_placement.choosable(cluster_gpu_types(manifests.nodes(shared)))
    assert {t.name: t.capacity for t in types.values()} == {"T4-SHARED": 16}
    [pod] = _placement("native", _job("T4-SHARED:1"), types)
    assert pod["resources"]["limits"]["nvidia.com/gpu"] == "1"
    terms = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert terms["nodeSelectorTerms"][0]["matchExpressions"][0]["values"] == ["Tesla-T4-SHARED"]


def _pod(node: str, resources: dict[str, str], phase: str = "Running") -> dict[str, Any]:
    return {
        "spec": {"nodeName": node, "containers": [{"resources": {"limits": resources}}]},
        "status": {"phase": phase},
    }


def test_usage_counts_each_types_resource_on_its_nodes() -> None:
    pods = [
        _pod("gpu-0", {"nvidia.com/gpu": "8"}),
        _pod("gpu-1", {"nvidia.com/gpu": "2"}),
        _pod("gpu-1", {"nvidia.com/gpu": "4"}, phase="Succeeded"),  # ended: holds none
        _pod("mig-0", {"nvidia.com/mig-1g.5gb": "3"}),
        _pod("runner-0", {"nvidia.com/gpu": "1"}),
    ]
    found = {t.name: t for t in gpu_placement.usage(TYPES.values(), pods)}
    assert (found["A100-40GB"].capacity, found["A100-40GB"].used, found["A100-40GB"].free) == (
        16,
        10,
        6,
    )
    assert found["A100-40GB"].product == "NVIDIA-A100-SXM4-40GB"
    assert (found["H100-80GB"].used, found["H100-80GB"].free) == (0, 16)
    assert (found["A100-40GB-MIG-1g.5gb"].used, found["A100-40GB-MIG-1g.5gb"].free) == (3, 4)


def test_a_typed_jobs_node_reason_names_its_type() -> None:
    job = parse_job(
        {
            "name": "t",
            "image": "python:3.11",
            "command": ["echo"],
            "gpus": "A100-40GB:2",
            "vc": "research",
        }
    ).job
    pods = [_pod("gpu-0", {"nvidia.com/gpu": "8"}), _pod("gpu-1", {"nvidia.com/gpu": "8"})]
    found = {t.name: t for t in gpu_placement.usage(TYPES.values(), pods)}
    reason = "no node has 2 free GPUs (4 nodes short of GPUs)"
    assert gpu_placement.typed_reason(job, reason, lambda: found) == (
        "waiting for 2 A100-40GB in VC research: 0 of 16 free"
    )
    quota = "queue research: 8 of 8 GPUs in use, needs 2"  # the VC's own cap comes first
    assert gpu_placement.typed_reason(job, quota, lambda: found) == quota
    untyped = _job(2)
    assert gpu_placement.typed_reason(untyped, reason, lambda: found) == reason


def test_hived_vc_rows_count_per_sku() -> None:
    def node(sku: str, states: list[str]) -> dict[str, Any]:
        return {
            "leafCellType": sku,
            "isNodeLevel": True,
            "cellAddress": "n",
            "cellChildren": [{"leafCellType": sku, "cellState": s} for s in states],
        }

    status = {"a": [node("DT", ["Free", "Used"]), node("K80", ["Used"]), node("CPU", ["Used"])]}
    cells = vc_cells(status, cpu_sku="CPU")["a"]
    assert cells.by_type == (("DT", 2, 1), ("K80", 1, 1))
    assert [(t.name, t.capacity, t.used, t.free) for t in cells.gpu_types()] == [
        ("DT", 2, 1, 1),
        ("K80", 1, 1, 0),
    ]
