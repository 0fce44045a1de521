"""Choosing a GPU type in the launch form, on the Kubernetes backend against the real test
control plane (tests/cluster), whose simulated nodes gpu-0/1 carry GPU Feature
Discovery's A100-40GB labels and gpu-2/3 H100-80GB ones: the role's GPU type select lists
the VC's types with their free GPUs, the chosen type is the role's skuType in the YAML,
and a 2-GPU job of that type shows in the Cluster tab as two more A100-40GB GPUs used."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.cluster import manifests
from tests.cluster.pytest_plugin import TestCluster, kube_cluster

from .conftest import Lab, open_page, open_panel, shot
from .kubelab import alice_lab

__all__ = ["kube_cluster"]

pytestmark = pytest.mark.kube
A100 = "A100-40GB"
H100 = "H100-80GB"
SKU_PATH = "extras.hivedScheduler.taskRoles.worker.skuType"


@pytest.fixture(scope="module")
def gpu_lab(kube_cluster: TestCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    """JupyterLab whose jupyter-pai talks to the test cluster as alice, native flavor, its
    pods on the simulated GPU pool (the typed nodes)."""
    with alice_lab(
        kube_cluster, tmp_path_factory.mktemp("gpu-type-lab"), {manifests.POOL_LABEL: "gpu"}
    ) as lab:
        yield lab


@pytest.fixture
def gpu_page(browser: Any, gpu_lab: Lab, request: pytest.FixtureRequest) -> Iterator[Any]:
    with open_page(browser, gpu_lab, request.node.name) as pg:
        yield pg


def vc_types(lab: Lab, vc: str = "default") -> dict[str, dict[str, Any]]:
    """The VC's GPU types as the REST API lists them, by name."""
    found = [v for v in lab.json("virtual-clusters")["items"] if v["name"] == vc]
    assert found, f"no VC {vc!r}"
    return {t["name"]: t for t in found[0].get("gpuTypes", [])}


def test_pick_gpu_type_and_see_it_used(gpu_page: Any, gpu_lab: Lab) -> None:
    page, lab = gpu_page, gpu_lab
    types = vc_types(lab)
    # The backend reads the types from the nodes' labels: 2 nodes x 8 GPUs of each.
    assert {A100, H100} <= types.keys(), types
    assert types[A100]["capacity"] == 16 and types[H100]["capacity"] == 16, types
    a100 = types[A100]

    open_panel(page, "launch")
    expect(page.locator(".jp-PAI-info-backend")).to_contain_text("kubernetes (native)")
    form = page.locator(".jp-PAI-launch")
    stamp = int(time.time())
    name = f"ui-gputype-{stamp}"
    form.locator("[data-path='name'] input").fill(name)
    form.locator("[data-path='defaults.virtualCluster'] select").select_option("default")

    field = form.locator(f"[data-path='{SKU_PATH}']")
    expect(field.locator("label")).to_have_text("GPU type")
    select = field.locator("select")
    expect(select).to_have_value("")
    # The runner node has no GPU type labels: its GPUs are counted, never offered.
    expect(select.locator("option")).to_have_text(
        [
            "Any type",
            f"{A100} — {a100['free']} of {a100['capacity']} free",
            re.compile(rf"^{H100} — \d+ of 16 free$"),
        ]
    )
    # A native select's list is not in a screenshot: show it as a list box for one.
    select.evaluate("s => { s.size = s.options.length; s.style.height = 'auto'; }")
    select.scroll_into_view_if_needed()
    shot(page, "gpu-type-1-choices")
    select.evaluate("s => { s.removeAttribute('size'); s.style.height = ''; }")

    select.select_option(A100)
    form.locator("[data-path='taskRoles.worker.instances'] input").fill("1")
    form.locator("[data-path='taskRoles.worker.resourcePerInstance.gpu'] input").fill("2")
    form.locator("[data-path='taskRoles.worker.resourcePerInstance.cpu'] input").fill("1")
    form.locator("[data-path='taskRoles.worker.resourcePerInstance.memoryMB'] input").fill("128")
    form.locator("[data-path='taskRoles.worker.commands'] textarea").fill("sleep 600")

    # The YAML has the OpenPAI field; back in the form, the type is still chosen.
    form.get_by_role("button", name="Edit as YAML").click()
    area = form.locator("#jp-PAI-yaml-text")
    expect(area).to_have_value(
        re.compile(rf"hivedScheduler:\s+taskRoles:\s+worker:\s+skuType: {A100}")
    )
    area.evaluate("a => { a.scrollTop = a.scrollHeight; }")
    shot(page, "gpu-type-2-yaml")
    form.get_by_role("button", name="Form", exact=True).click()
    expect(select).to_have_value(A100)

    # A type the VC does not have, typed in the YAML, shows as such in the form.
    form.get_by_role("button", name="Edit as YAML").click()
    area.fill(area.input_value().replace(f"skuType: {A100}", "skuType: T4-SHARED"))
    form.get_by_role("button", name="Form", exact=True).click()
    expect(select).to_have_value("T4-SHARED")
    expect(select.locator("option:checked")).to_have_text("T4-SHARED (not in this VC)")
    # The server refuses it: its error is under the select, which gets the focus.
    form.locator(".jp-PAI-submit").click()
    expect(field).to_have_class(re.compile(r"\bjp-mod-invalid\b"))
    expect(field.locator(".jp-PAI-field-errors")).to_contain_text("T4-SHARED")
    expect(select).to_be_focused()
    shot(page, "gpu-type-3-refused")
    select.select_option(A100)
    expect(field.locator(".jp-PAI-field-errors")).to_have_count(0)
    expect(select.locator("option[value='T4-SHARED']")).to_have_count(0)

    form.locator(".jp-PAI-submit").click()
    expect(page.locator(".jp-PAI-detail-head h2")).to_have_text(name)
    job = lab.job_by_name(name)
    lab.submitted.append(job["id"])
    assert job["totalGpuNumber"] == 2, job
    spec = lab.job(job["id"])["spec"]
    assert spec["extras"]["hivedScheduler"]["taskRoles"]["worker"] == {"skuType": A100}, spec

    # Placed by type: its pod is on an A100 node, and the Cluster tab counts it there.
    lab.wait_state(job["id"], "RUNNING", timeout=90)
    detail = page.locator(".jp-PAI-detail-panel")
    # Columns: task, state, node, …
    node = detail.locator("tr[data-task='worker-0'] td").nth(2)
    expect(node).to_have_text(re.compile(r"^gpu-[01]$"))
    open_panel(page, "cluster")
    row = page.locator(".jp-PAI-vc[data-vc='default'] tr[data-gpu-type='A100-40GB']")
    used = a100["used"] + 2
    expect(row.locator("th")).to_have_text(A100)
    expect(row.locator(".jp-PAI-vc-gputype-used")).to_have_text(
        f"{used} / {a100['capacity']}", timeout=30_000
    )
    expect(row.locator(".jp-PAI-vc-gputype-free")).to_have_text(str(a100["capacity"] - used))
    expect(
        page.locator(".jp-PAI-vc[data-vc='default'] tr[data-gpu-type='H100-80GB']")
    ).to_be_visible()
    shot(page, "gpu-type-4-cluster")

    lab.stop(job["id"])
    lab.wait_state(job["id"], "STOPPED", timeout=60)
    expect(row.locator(".jp-PAI-vc-gputype-used")).to_have_text(
        f"{a100['used']} / {a100['capacity']}", timeout=30_000
    )
