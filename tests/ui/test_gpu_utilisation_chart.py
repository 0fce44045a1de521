"""A job's GPU-use chart per task in the job detail, on the Kubernetes backend
of the test cluster with a real Prometheus (Debian's) scraping a DCGM-format exporter:
the 2-GPU task's line follows the values the exporter serves, with the latest GPU % and
memory beside it; the CPU-only task shows a dash, not zeros."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client
from playwright.sync_api import expect

from tests.cluster import manifests
from tests.cluster.pytest_plugin import TestCluster, kube_cluster
from tests.prometheus import DcgmExporter, GpuSeries, dcgm_exporter, prometheus

from .conftest import Lab, job_row, open_page, open_panel, run_lab, shot

__all__ = ["kube_cluster"]

pytestmark = pytest.mark.kube
OWNED = "app.kubernetes.io/managed-by=jupyter-pai"


@pytest.fixture(scope="module")
def exporter() -> Iterator[DcgmExporter]:
    with dcgm_exporter() as e:
        yield e


@pytest.fixture(scope="module")
def util_lab(
    kube_cluster: TestCluster, exporter: DcgmExporter, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Lab]:
    base = tmp_path_factory.mktemp("util-lab")
    with prometheus(base / "prometheus", exporter) as prom:
        config = {
            "PAIConfig": {"backend": "kubernetes"},
            "KubernetesBackend": {
                "kubeconfig": str(kube_cluster.user_kubeconfigs["alice"]),
                "flavor": "native",
                "user": "alice",
                # Simulated GPU nodes: the pods run at once and stay Running.
                "node_selector": {manifests.POOL_LABEL: "gpu"},
                "prometheus_url": prom.url,
                "utilisation_cache_seconds": 1,
            },
        }
        (base / "lab").mkdir()
        with run_lab(base / "lab", server_config=config) as lab:
            yield lab
    api = kube_cluster.api()
    client.BatchV1Api(api).delete_collection_namespaced_job(
        "alice", label_selector=OWNED, propagation_policy="Background"
    )
    core = client.CoreV1Api(api)
    core.delete_collection_namespaced_config_map("alice", label_selector=OWNED)
    core.delete_collection_namespaced_pod("alice", label_selector=OWNED, grace_period_seconds=0)


@pytest.fixture
def util_page(browser: Any, util_lab: Lab, request: pytest.FixtureRequest) -> Iterator[Any]:
    with open_page(browser, util_lab, request.node.name) as pg:
        yield pg


def test_a_running_tasks_gpu_use_chart(
    util_page: Any, util_lab: Lab, exporter: DcgmExporter, kube_cluster: TestCluster
) -> None:
    page, lab = util_page, util_lab
    name = f"ui-util-{int(time.time())}"
    spec = {
        "protocolVersion": 2,
        "name": name,
        "type": "job",
        "taskRoles": {
            "trainer": {
                "instances": 1,
                "resourcePerInstance": {"cpu": 1, "memoryMB": 256, "gpu": 2},
                "commands": ["sleep 600"],
            },
            "loader": {
                "instances": 1,
                "resourcePerInstance": {"cpu": 1, "memoryMB": 256, "gpu": 0},
                "commands": ["sleep 600"],
            },
        },
    }
    job = lab.json("jobs", method="POST", body=json.dumps(spec).encode())["job"]
    lab.submitted.append(job["id"])
    lab.wait_state(job["id"], "RUNNING", timeout=60)
    core = client.CoreV1Api(kube_cluster.api())
    pods = [p.metadata.name for p in core.list_namespaced_pod("alice").items]
    trainer = next(p for p in pods if name in p and "trainer" in p)

    open_panel(page, "jobs")
    job_row(page, name).locator(".jp-PAI-job-name").click()
    detail = page.locator(".jp-PAI-detail-panel")
    cell = detail.locator(".jp-PAI-util[data-task='trainer-0']")
    # The task's GPUs go from idle to busy while the tab samples them.
    for percent in (10, 40, 70, 95):
        exporter.gpus = [
            GpuSeries("alice", trainer, 0, percent, 1000 + 100 * percent),
            GpuSeries("alice", trainer, 1, percent, 1000 + 100 * percent),
        ]
        expect(cell.locator(".jp-PAI-util-text")).to_have_text(
            f"{percent} % · {2 * (1000 + 100 * percent)} MiB", timeout=30_000
        )
    points = cell.locator("polyline").get_attribute("points") or ""
    assert len(points.split()) >= 4, points
    loader = detail.locator("tr[data-task='loader-0']")
    expect(loader).to_contain_text("—")
    expect(loader.locator(".jp-PAI-util-chart")).to_have_count(0)
    shot(page, "job-utilisation-chart")
    lab.stop(job["id"])
