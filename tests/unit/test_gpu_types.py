"""GPU types from Kubernetes Node objects (GFD labels: whole GPUs, MIG single and mixed,
time-slicing and MPS), from HiveD's SKUs, and ``TYPE:COUNT`` requests. The node fixtures and
HiveD's answers are in ``golden/gpu_types/``; what is read from them is pinned as golden
JSON (``UPDATE_GOLDEN=1`` rewrites it)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from jupyter_pai.backends.gputypes import (
    GPU_RESOURCE,
    HIVED_RESOURCE,
    PRODUCT_LABEL,
    UNKNOWN,
    GpuType,
    canonical_name,
    cluster_gpu_types,
    hived_gpu_types,
    hived_vc_gpu_types,
    node_gpu_types,
    parse_gpu_request,
)
from tests.golden import check_golden

HERE = Path(__file__).parent / "golden" / "gpu_types"
NODE_FILES = sorted((HERE / "nodes").glob("*.json"))


def _node(stem: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((HERE / "nodes" / f"{stem}.json").read_text())
    return data


def _type(gpu_type: GpuType) -> dict[str, Any]:
    return {**dataclasses.asdict(gpu_type), "selector": gpu_type.selector()}


def _json(data: Any) -> str:
    return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def test_node_and_cluster_types_golden() -> None:
    nodes = [json.loads(p.read_text()) for p in NODE_FILES]
    data = {
        "nodes": {
            p.stem: [{**_type(t), "count": n} for t, n in node_gpu_types(node)]
            for p, node in zip(NODE_FILES, nodes, strict=True)
        },
        "cluster": [
            {
                **dataclasses.asdict(c),
                "variants": [_type(v) for v in c.variants],
                "node_affinity_term": c.node_affinity_term(),
            }
            for c in cluster_gpu_types(nodes)
        ],
    }
    check_golden(HERE / "types.json", _json(data), json.loads)


@pytest.mark.parametrize(
    ("stem", "expected"),
    [
        ("h100-80gb", [("H100-80GB", GPU_RESOURCE, 8)]),
        ("a100-40gb-sxm4", [("A100-40GB", GPU_RESOURCE, 8)]),
        ("a100-40gb-pcie", [("A100-40GB", GPU_RESOURCE, 2)]),
        ("t4", [("T4-16GB", GPU_RESOURCE, 1)]),
        ("t4-time-slicing", [("T4-SHARED", GPU_RESOURCE, 4)]),
        ("l4-mps-renamed", [("L4-SHARED", "nvidia.com/gpu.shared", 2)]),
        ("a100-mig-single", [("A100-40GB-MIG-1g.5gb", GPU_RESOURCE, 56)]),
        (
            "a100-mig-mixed",
            [
                ("A100-40GB-MIG-1g.5gb", "nvidia.com/mig-1g.5gb", 14),
                ("A100-40GB-MIG-3g.20gb", "nvidia.com/mig-3g.20gb", 4),
                ("A100-40GB", GPU_RESOURCE, 4),
            ],
        ),
        ("no-gfd-labels", [(UNKNOWN, GPU_RESOURCE, 4)]),
        ("cpu-only", []),
    ],
)
def test_each_node_kind(stem: str, expected: list[tuple[str, str, int]]) -> None:
    found = node_gpu_types(_node(stem))
    assert [(t.name, t.resource, n) for t, n in found] == expected


def test_what_pins_a_pod_to_a_type() -> None:
    (h100, _), *_ = node_gpu_types(_node("h100-80gb"))
    assert h100.selector() == {PRODUCT_LABEL: "NVIDIA-H100-80GB-HBM3"}
    assert (h100.memory_mb, h100.family, h100.mig_profile, h100.shared) == (
        81559,
        "hopper",
        None,
        False,
    )
    single, _ = node_gpu_types(_node("a100-mig-single"))[0]
    assert single.selector() == {PRODUCT_LABEL: "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb"}
    assert (single.mig_profile, single.memory_mb) == ("1g.5gb", 4864)
    mixed, _ = node_gpu_types(_node("a100-mig-mixed"))[0]
    # The resource finds a 1g.5gb slice; the product keeps it on an A100-40GB.
    assert (mixed.resource, mixed.memory_mb) == ("nvidia.com/mig-1g.5gb", 4864)
    assert mixed.selector() == {PRODUCT_LABEL: "NVIDIA-A100-SXM4-40GB"}
    shared, _ = node_gpu_types(_node("t4-time-slicing"))[0]
    assert shared.shared and shared.selector() == {PRODUCT_LABEL: "Tesla-T4-SHARED"}
    unknown, _ = node_gpu_types(_node("no-gfd-labels"))[0]
    assert unknown.selector() == {}


def test_one_name_spans_products_and_nodes() -> None:
    nodes = [_node("a100-40gb-sxm4"), _node("a100-40gb-pcie"), _node("a100-mig-mixed")]
    (a100, *_) = cluster_gpu_types(nodes)
    assert a100.name == "A100-40GB"
    assert a100.nodes == ("gpu-a100-0", "gpu-a100-mig-mixed-0", "gpu-a100-pcie-0")
    assert a100.capacity == 8 + 2 + 4
    assert a100.products == ("NVIDIA-A100-PCIE-40GB", "NVIDIA-A100-SXM4-40GB")
    assert a100.node_affinity_term() == {
        "key": PRODUCT_LABEL,
        "operator": "In",
        "values": ["NVIDIA-A100-PCIE-40GB", "NVIDIA-A100-SXM4-40GB"],
    }


def test_one_mig_profile_asked_for_two_ways() -> None:
    """MIG ``single`` offers slices as nvidia.com/gpu, ``mixed`` as nvidia.com/mig-…: one
    name, two variants, so that a flavor places each with its own resource."""
    nodes = [_node("a100-mig-single"), _node("a100-mig-mixed"), _node("a100-mig-mixed")]
    nodes[2]["metadata"]["name"] = "gpu-a100-mig-mixed-1"
    mig = next(c for c in cluster_gpu_types(nodes) if c.name == "A100-40GB-MIG-1g.5gb")
    assert mig.capacity == 56 + 14 + 14
    assert [v.resource for v in mig.variants] == ["nvidia.com/mig-1g.5gb", GPU_RESOURCE]
    assert mig.resources == (GPU_RESOURCE, "nvidia.com/mig-1g.5gb")


def test_a_labelled_gpu_not_offered_yet_counts_zero() -> None:
    node = _node("h100-80gb")
    del node["status"]["allocatable"]["nvidia.com/gpu"]
    assert [(t.name, n) for t, n in node_gpu_types(node)] == [("H100-80GB", 0)]


@pytest.mark.parametrize(
    ("product", "memory_mb", "name"),
    [
        ("NVIDIA-H100-80GB-HBM3", 81559, "H100-80GB"),
        ("NVIDIA-A100-SXM4-40GB", None, "A100-40GB"),
        ("NVIDIA-A100-80GB-PCIe", 81920, "A100-80GB"),
        ("Tesla-V100-SXM2-16GB", 16160, "V100-16GB"),
        ("Tesla-T4", 15360, "T4-16GB"),
        ("Tesla-T4", None, "T4"),
        ("NVIDIA-L4", 23034, "L4-24GB"),
        ("NVIDIA-H100-NVL", 95830, "H100-NVL-94GB"),
        ("NVIDIA-GeForce-RTX-4090", 24564, "RTX-4090-24GB"),
        ("NVIDIA-H200", 143771, "H200-141GB"),
        ("NVIDIA-A100-SXM4-40GB-MIG-1g.5gb", 4864, "A100-40GB-MIG-1g.5gb"),
        ("NVIDIA-A30-MIG-1g.6gb", 5952, "A30-MIG-1g.6gb"),
        ("Tesla-T4-SHARED", None, "T4-SHARED"),
        ("NVIDIA-A100-SXM4-80GB-SHARED", None, "A100-80GB-SHARED"),
        ("Future GPU (rev 2)", 300000, "Future-GPU-rev-2-293GB"),
    ],
)
def test_canonical_names(product: str, memory_mb: int | None, name: str) -> None:
    assert canonical_name(product, memory_mb)[0] == name


# -- HiveD ------------------------------------------------------------------------------


def _hived() -> tuple[dict[str, Any], dict[str, Any]]:
    config = yaml.safe_load((HERE / "hived-config.yaml").read_text())
    status = json.loads((HERE / "hived-vc-status.json").read_text())
    return config["physicalCluster"]["skuTypes"], status


def test_hived_skus_golden() -> None:
    skus, status = _hived()
    data = {
        "types": [
            {**dataclasses.asdict(c), "variants": [_type(v) for v in c.variants]}
            for c in hived_gpu_types(skus, status)
        ],
        "without_sku_types": [
            (c.name, c.capacity) for c in hived_gpu_types(None, status, cpu_skus=["CPU"])
        ],
        "per_vc": hived_vc_gpu_types(status, cpu_skus=["CPU"]),
    }
    check_golden(HERE / "hived.json", _json(data), json.loads)


def test_hived_sku_names_are_used_as_they_are() -> None:
    skus, status = _hived()
    found = {c.name: c for c in hived_gpu_types(skus, status)}
    assert sorted(found) == ["A100", "K80", "V100"]  # CPU has gpu: 0
    v100 = found["V100"]
    assert (v100.capacity, v100.nodes) == (4, ("node-v100-0",))
    assert found["K80"].capacity == 8 and found["A100"].capacity == 0
    assert v100.gpu_type.leaf_cell_type == "V100" and v100.gpu_type.selector() == {}
    assert v100.gpu_type.resource == HIVED_RESOURCE
    # HiveD schedules without skuTypes: a leaf cell type it does not list still counts.
    partial = hived_gpu_types({"K80": skus["K80"], "CPU": skus["CPU"]}, status)
    assert [(c.name, c.capacity) for c in partial] == [("K80", 8), ("V100", 4)]
    assert hived_vc_gpu_types(status, cpu_skus=["CPU"]) == {
        "vc1": {"V100": 4},
        "vc2": {"K80": 8},
        "empty": {},
    }


# -- requests ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2", (None, 2)),
        ("0", (None, 0)),
        ("H100-80GB:2", ("H100-80GB", 2)),
        ("A100-40GB-MIG-1g.5gb:7", ("A100-40GB-MIG-1g.5gb", 7)),
        (" DT:1 ", ("DT", 1)),
    ],
)
def test_parse_gpu_request(text: str, expected: tuple[str | None, int]) -> None:
    assert parse_gpu_request(text) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (":2", "':2' has no GPU type before ':'"),
        ("H100:", "'H100:' has no GPU count after ':'"),
        ("H100:-1", "'H100:-1': the GPU count must be a whole number ≥ 1 (got '-1')"),
        ("a b:1", "'a b' is not a GPU type name"),
        ("H100:0", "'H100:0': a GPU type needs a count of at least 1"),
        ("two", "'two': the GPU count must be a whole number ≥ 0"),
        ("", "is empty"),
        ("-x:1", "'-x' is not a GPU type name"),
    ],
)
def test_parse_gpu_request_errors_name_the_problem(text: str, message: str) -> None:
    with pytest.raises(ValueError) as info:
        parse_gpu_request(text)
    assert str(info.value).startswith(message), str(info.value)
