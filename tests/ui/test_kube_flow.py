"""The submit-and-follow flow of the UI on the Kubernetes backend, against the
real test control plane (tests/cluster): a 2-worker job submitted through the launch form
waits in the job list while the runner node's GPUs are taken, then runs (its pods really
run on the runner node) and succeeds; its detail tab shows both tasks on runner-0."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.cluster import manifests
from tests.cluster.pytest_plugin import TestCluster, kube_cluster

from .conftest import Lab, job_row, open_page, open_panel, shot
from .kubelab import alice_lab

__all__ = ["kube_cluster"]

pytestmark = pytest.mark.kube
COMMAND = "for i in 1 2 3 4 5 6; do echo step $i; sleep 1; done"


@pytest.fixture(scope="module")
def kube_lab(kube_cluster: TestCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    """JupyterLab whose jupyter-pai talks to the test cluster as user alice (namespace
    alice), native flavor, pods on the runner node (where they really run)."""
    with alice_lab(
        kube_cluster, tmp_path_factory.mktemp("kube-lab"), {manifests.RUNNER_LABEL: "true"}
    ) as lab:
        yield lab


@pytest.fixture
def kube_page(browser: Any, kube_lab: Lab, request: pytest.FixtureRequest) -> Iterator[Any]:
    with open_page(browser, kube_lab, request.node.name) as pg:
        yield pg


def test_submit_and_follow_on_kubernetes(kube_page: Any, kube_lab: Lab) -> None:
    page, lab = kube_page, kube_lab
    info = lab.json("info")
    assert info["backend"] == "kubernetes" and info["namespace"] == "alice", info

    # The runner node has 4 GPUs: take them all, so the new job must wait.
    stamp = int(time.time())
    blocker = lab.submit(f"ui-kube-blocker-{stamp}", "sleep 300", gpu=4)
    lab.wait_state(blocker["id"], "RUNNING", timeout=90)

    open_panel(page, "launch")
    expect(page.locator(".jp-PAI-info-backend")).to_contain_text("kubernetes (native)")
    form = page.locator(".jp-PAI-launch")
    name = f"ui-kube-{stamp}"
    form.locator("[data-path='name'] input").fill(name)
    form.locator("[data-path='defaults.virtualCluster'] select").select_option("default")
    form.locator("[data-path='taskRoles.worker.instances'] input").fill("2")
    form.locator("[data-path='taskRoles.worker.resourcePerInstance.gpu'] input").fill("1")
    form.locator("[data-path='taskRoles.worker.resourcePerInstance.cpu'] input").fill("1")
    form.locator("[data-path='taskRoles.worker.resourcePerInstance.memoryMB'] input").fill("128")
    form.locator("[data-path='taskRoles.worker.commands'] textarea").fill(COMMAND)
    form.locator(".jp-PAI-submit").click()
    expect(page.locator(".jp-PAI-detail-head h2")).to_have_text(name)
    job = lab.job_by_name(name)
    lab.submitted.append(job["id"])
    assert job["id"] == f"alice~{name}" and job["totalTaskNumber"] == 2

    open_panel(page, "jobs")
    state = job_row(page, name).locator(".jp-PAI-col-state")
    expect(state).to_have_text("WAITING", timeout=30_000)
    expect(page.locator(".jp-PAI-waiting")).to_be_visible()
    shot(page, "kube-flow-1-waiting")

    lab.stop(blocker["id"])
    # Bounded step by step, so a timeout says which was slow: the stopped job's pods leaving
    # the runner, then the waiting job's pods placed and started. Its message names the
    # job's and tasks' states, and the pods as the cluster has them with what the runner
    # and the controller manager logged of them.
    lab.wait_state(blocker["id"], "STOPPED", timeout=120)
    lab.wait_state(job["id"], "RUNNING", "SUCCEEDED", timeout=120)
    expect(state).to_have_text("RUNNING", timeout=30_000)
    detail = page.locator(".jp-PAI-detail-panel")
    expect(detail.locator("tr[data-task='worker-0']")).to_contain_text("runner-0")
    expect(detail.locator("tr[data-task='worker-1']")).to_contain_text("runner-0")
    shot(page, "kube-flow-2-running")

    expect(state).to_have_text("SUCCEEDED", timeout=90_000)
    for index in (0, 1):
        task = detail.locator(f"tr[data-task='worker-{index}']")
        expect(task).to_contain_text("SUCCEEDED")
        expect(task.locator("td.jp-PAI-num").first).to_contain_text("0")
        # Kubernetes says how many GPUs a pod has, not which devices.
        expect(task.locator("td.jp-PAI-gpus")).to_have_text("1")
    # The log viewer reads the task's log from the cluster (size, then byte ranges).
    log_view = detail.locator(".jp-PAI-log")
    expect(log_view.locator(".jp-PAI-log-line", has_text="step 6")).to_be_visible(timeout=30_000)
    expect(log_view).not_to_contain_text("Could not read the log")
    # The pods really ran on the runner node: their output is in the cluster's pod logs.
    log = lab.api(f"jobs/{job['id'].replace('~', '%7E')}/logs?role=worker&index=1").decode()
    assert [line for line in log.splitlines() if line.startswith("step")] == [
        f"step {i}" for i in range(1, 7)
    ], log
    shot(page, "kube-flow-3-succeeded")
    expect(job_row(page, blocker["name"]).locator(".jp-PAI-col-state")).to_have_text(
        "STOPPED", timeout=60_000
    )
