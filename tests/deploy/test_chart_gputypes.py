"""The chart's per-GPU-type quotas without a cluster: on kueue a ResourceFlavor per type
(per product of a type of several) and each typed VC's quota per flavor; on volcano a
queue per VC and type; elsewhere the VC's total with a note saying where they hold; bad types refused naming the
field. Without `gpuTypes` the chart renders as the golden files of test_chart say."""

from __future__ import annotations

import copy
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from jupyter_pai.backends.gputypes import PRODUCT_LABEL
from jupyter_pai.backends.kubernetes import permissions
from tests.golden import check_golden

from . import chart
from .chart import flavor_values, named, objects, template

GOLDEN = Path(__file__).parent / "golden"

A100 = "NVIDIA-A100-SXM4-40GB"
A100_PCIE = "NVIDIA-A100-PCIE-40GB"
H100 = "NVIDIA-H100-80GB-HBM3"

GPU_TYPES: dict[str, Any] = {
    "A100-40GB": {"product": A100},
    "H100-80GB": {"product": H100},
}


def typed_values(flavor: str) -> dict[str, Any]:
    """test_chart's values with two GPU types: `research` holds 6 A100s and 2 H100s (gpus
    left out: their sum, 8, as without types), `default` stays untyped."""
    values = copy.deepcopy(flavor_values(flavor))
    values["gpuTypes"] = copy.deepcopy(GPU_TYPES)
    values["virtualClusters"]["research"] = {
        "gpuTypes": {"A100-40GB": 6, "H100-80GB": 2},
        "borrow": False,
        "lend": False,
    }
    return values


def quotas(queue: dict[str, Any]) -> dict[str, dict[str, str]]:
    """flavor -> its GPU resource's quota fields, for a ClusterQueue's one resource group."""
    [group] = queue["spec"]["resourceGroups"]
    assert group["coveredResources"] == ["nvidia.com/gpu"]
    out = {}
    for flavor in group["flavors"]:
        [resource] = flavor["resources"]
        assert resource.pop("name") == "nvidia.com/gpu"
        out[flavor["name"]] = resource
    return out


@pytest.mark.parametrize("flavor", permissions.FLAVORS)
def test_template_golden_with_gpu_types(flavor: str) -> None:
    check_golden(GOLDEN / f"{flavor}-gputypes.yaml", template(typed_values(flavor)))


def test_kueue_flavor_and_quota_per_type() -> None:
    docs = objects(template(typed_values("kueue")))
    flavors = {d["metadata"]["name"]: d for d in docs if d["kind"] == "ResourceFlavor"}
    assert set(flavors) == {"gpu", "gpu-a100-40gb", "gpu-h100-80gb"}
    assert "spec" not in flavors["gpu"] or not flavors["gpu"]["spec"].get("nodeLabels")
    assert flavors["gpu-a100-40gb"]["spec"]["nodeLabels"] == {PRODUCT_LABEL: A100}
    assert flavors["gpu-h100-80gb"]["spec"]["nodeLabels"] == {PRODUCT_LABEL: H100}
    # research neither borrows nor lends: both limits 0 on every flavor.
    assert quotas(named(docs, "ClusterQueue", "research")) == {
        "gpu-a100-40gb": {"nominalQuota": "6", "borrowingLimit": "0", "lendingLimit": "0"},
        "gpu-h100-80gb": {"nominalQuota": "2", "borrowingLimit": "0", "lendingLimit": "0"},
    }
    # An untyped VC keeps the one untyped flavor, as without gpuTypes.
    assert quotas(named(docs, "ClusterQueue", "default")) == {"gpu": {"nominalQuota": "24"}}


def test_kueue_type_a_vc_lacks_is_listed_at_zero_to_borrow() -> None:
    values = typed_values("kueue")
    values["virtualClusters"]["vision"] = {"gpus": 2, "gpuTypes": {"H100-80GB": 2}}
    docs = objects(template(values))
    assert quotas(named(docs, "ClusterQueue", "vision")) == {
        "gpu-a100-40gb": {"nominalQuota": "0"},
        "gpu-h100-80gb": {"nominalQuota": "2"},
    }


def test_kueue_type_of_several_products_has_a_flavor_per_product() -> None:
    values = typed_values("kueue")
    values["gpuTypes"]["A100-40GB"] = {"products": [A100, A100_PCIE]}
    values["virtualClusters"]["research"]["gpuTypes"]["A100-40GB"] = {A100: 4, A100_PCIE: 2}
    docs = objects(template(values))
    sxm, pcie = "gpu-a100-40gb-nvidia-a100-sxm4-40gb", "gpu-a100-40gb-nvidia-a100-pcie-40gb"
    assert named(docs, "ResourceFlavor", sxm)["spec"]["nodeLabels"] == {PRODUCT_LABEL: A100}
    assert named(docs, "ResourceFlavor", pcie)["spec"]["nodeLabels"] == {PRODUCT_LABEL: A100_PCIE}
    got = quotas(named(docs, "ClusterQueue", "research"))
    assert list(got) == [sxm, pcie, "gpu-h100-80gb"]  # the order Kueue tries them in
    assert [q["nominalQuota"] for q in got.values()] == ["4", "2", "2"]


def test_volcano_queue_per_vc_and_type() -> None:
    docs = objects(template(typed_values("volcano")))
    queues = {d["metadata"]["name"]: d for d in docs if d["kind"] == "Queue"}
    # research is split: no queue of its own, one per type; default stays one queue.
    assert set(queues) == {"default", "research-a100-40gb", "research-h100-80gb"}
    for name, vc_type, gpus in [
        ("research-a100-40gb", "A100-40GB", "6"),
        ("research-h100-80gb", "H100-80GB", "2"),
    ]:
        q = queues[name]
        labels = q["metadata"]["labels"]
        assert labels["jupyter-pai.io/virtual-cluster"] == "research"
        assert labels["jupyter-pai.io/gpu-type"] == vc_type
        share = {"nvidia.com/gpu": gpus}
        assert q["spec"]["deserved"] == share
        assert q["spec"]["capability"] == share  # borrow: false
        assert q["spec"]["guarantee"] == {"resource": share}  # lend: false
    assert "jupyter-pai.io/gpu-type" not in queues["default"]["metadata"]["labels"]


def test_volcano_type_of_several_products_sums_them() -> None:
    values = typed_values("volcano")
    values["gpuTypes"]["A100-40GB"] = {"products": [A100, A100_PCIE]}
    values["virtualClusters"]["research"]["gpuTypes"]["A100-40GB"] = {A100: 4, A100_PCIE: 2}
    docs = objects(template(values))
    assert named(docs, "Queue", "research-a100-40gb")["spec"]["deserved"] == {"nvidia.com/gpu": "6"}


def test_native_holds_the_total() -> None:
    docs = objects(template(typed_values("native")))
    quota = named(docs, "ResourceQuota", "vc-research")
    assert quota["spec"]["hard"] == {"requests.nvidia.com/gpu": "8"}
    assert not [d for d in docs if d["kind"] == "ResourceFlavor"]


def _notes(values: dict[str, Any], tmp_path: Path) -> str:
    """NOTES.txt as `helm install` prints it: `helm template` leaves it out, so a copy of
    the chart renders it into a ConfigMap (tpl sees the chart's own helpers)."""
    copy_dir = tmp_path / "chart"
    shutil.copytree(chart.CHART, copy_dir)
    shutil.copy(copy_dir / "templates" / "NOTES.txt", copy_dir / "files" / "notes.txt")
    (copy_dir / "templates" / "notes-probe.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: notes}\n"
        'data:\n  notes: {{ tpl (.Files.Get "files/notes.txt") . | quote }}\n'
    )
    original = chart.CHART
    chart.CHART = copy_dir
    try:
        docs = objects(template(values))
    finally:
        chart.CHART = original
    notes: str = named(docs, "ConfigMap", "notes")["data"]["notes"]
    return notes


@pytest.mark.parametrize("flavor", permissions.FLAVORS)
def test_notes_say_where_per_type_quotas_hold(flavor: str, tmp_path: Path) -> None:
    notes = " ".join(_notes(typed_values(flavor), tmp_path).split())
    if flavor == "kueue":
        assert "per-type quotas in the ClusterQueues of research" in notes
    elif flavor == "hived":
        assert "no per-type quotas from gpuTypes on hived: HiveD's types are its SKUs" in notes
    elif flavor == "volcano":
        assert "Per-GPU-type quotas for research: a Volcano queue per VC and type" in notes
    else:
        assert (
            f"per-GPU-type quotas need flavor kueue or volcano. On {flavor} the VCs research"
            in notes
        )
    # Without gpuTypes: no word of them.
    plain = _notes(flavor_values(flavor), tmp_path / "plain")
    assert "gpuTypes" not in plain and "GPU type" not in plain


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            lambda v: v["virtualClusters"]["research"]["gpuTypes"].update({"V100": 2}),
            r"virtualClusters.research.gpuTypes.V100: not a type in gpuTypes "
            r"\(A100-40GB, H100-80GB\)",
        ),
        (
            lambda v: v.pop("gpuTypes"),
            r"virtualClusters.research.gpuTypes.A100-40GB: not a type in gpuTypes \(none\)",
        ),
        (
            lambda v: v["virtualClusters"]["research"].update({"gpus": 10}),
            r"virtualClusters.research.gpus: 10 is not the sum of its gpuTypes \(8\)",
        ),
        (
            lambda v: v["virtualClusters"]["research"]["gpuTypes"].update({"H100-80GB": -1}),
            "virtualClusters.research.gpuTypes.H100-80GB: must be a whole number of GPUs",
        ),
        (
            lambda v: v["virtualClusters"]["research"]["gpuTypes"].update({"H100-80GB": "4"}),
            "virtualClusters.research.gpuTypes.H100-80GB: must be a whole number of GPUs",
        ),
        (
            lambda v: v["virtualClusters"]["research"].update({"gpuTypes": [8]}),
            r"virtualClusters.research.gpuTypes: must be a map \{type: GPUs\}",
        ),
        (
            lambda v: v["gpuTypes"].update({"T4": {}}),
            "gpuTypes.T4: give exactly one of product",
        ),
        (
            lambda v: v["gpuTypes"].update({"T4": {"products": []}}),
            "gpuTypes.T4.products: must be a non-empty list",
        ),
        (
            lambda v: v["gpuTypes"].update({"T4": {"product": "Tesla T4"}}),
            "gpuTypes.T4: product Tesla T4 is not a node label value",
        ),
        (
            lambda v: v["gpuTypes"].update({"h100-80gb": {"product": H100}}),
            "gpuTypes.h100-80gb: its Kueue ResourceFlavor gpu-h100-80gb is also",
        ),
        (
            lambda v: v.update({"gpuTypes": ["A100-40GB"]}),
            r"gpuTypes: must be a map \{type: \{product",
        ),
        (
            lambda v: v["gpuTypes"].update({"A100-40GB": {"products": [A100, A100_PCIE]}}),
            "virtualClusters.research.gpuTypes.A100-40GB: a type of several products needs "
            "its GPUs per product on kueue",
        ),
        (
            lambda v: v["virtualClusters"]["research"]["gpuTypes"].update({"A100-40GB": {H100: 2}}),
            "virtualClusters.research.gpuTypes.A100-40GB.NVIDIA-H100-80GB-HBM3: not a product "
            "of gpuTypes.A100-40GB",
        ),
    ],
)
def test_bad_gpu_types_name_the_field(change: Any, message: str) -> None:
    values = typed_values("kueue")
    change(values)
    with pytest.raises(AssertionError, match=message):
        template(values)


@pytest.mark.parametrize("flavor", permissions.FLAVORS)
def test_every_flavor_checks_the_types_a_vc_names(flavor: str) -> None:
    values = typed_values(flavor)
    values["virtualClusters"]["research"]["gpuTypes"] = {"V100": 8}
    with pytest.raises(
        AssertionError, match=r"virtualClusters\.research\.gpuTypes\.V100: not a type"
    ):
        template(values)


def test_lint_with_gpu_types(tmp_path: Path) -> None:
    values = tmp_path / "values.yaml"
    for flavor in permissions.FLAVORS:
        values.write_text(yaml.safe_dump(typed_values(flavor)))
        out = chart.helm_run("lint", "--strict", str(chart.CHART), "--values", str(values))
        assert "0 chart(s) failed" in out


def test_without_gpu_types_nothing_changes() -> None:
    """An empty gpuTypes is no gpuTypes: the golden render of test_chart."""
    for flavor in permissions.FLAVORS:
        values = {**flavor_values(flavor), "gpuTypes": {}}
        assert template(values) == (GOLDEN / f"{flavor}.yaml").read_text(encoding="utf-8")


def test_values_yaml_documents_gpu_types() -> None:
    text = (chart.CHART / "values.yaml").read_text(encoding="utf-8")
    assert yaml.safe_load(text)["gpuTypes"] == {}
