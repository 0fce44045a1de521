"""The cluster view's permission check on the Kubernetes backend (alice, volcano flavour,
the real test control plane): all permissions held, then, with alice's RoleBinding
deleted by the admin, each missing one named in words with whom to ask."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import expect

from jupyter_pai.backends.kubernetes.permissions import required
from tests.cluster import manifests
from tests.cluster.pytest_plugin import TestCluster, kube_cluster
from tests.kube.test_selfcheck import without_binding

from .conftest import Lab, open_page, open_panel, run_lab, shot

__all__ = ["kube_cluster"]

pytestmark = pytest.mark.kube


@pytest.fixture(scope="module")
def volcano_lab(
    kube_cluster: TestCluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Lab]:
    config = {
        "PAIConfig": {"backend": "kubernetes"},
        "KubernetesBackend": {
            "kubeconfig": str(kube_cluster.user_kubeconfigs["alice"]),
            "flavor": "volcano",
            "user": "alice",
            "namespace": "alice",
            "node_selector": {manifests.RUNNER_LABEL: "true"},
        },
    }
    with run_lab(tmp_path_factory.mktemp("check-lab"), server_config=config) as lab:
        yield lab


def test_the_cluster_view_names_missing_permissions(
    browser: Any, volcano_lab: Lab, kube_cluster: TestCluster, request: pytest.FixtureRequest
) -> None:
    with open_page(browser, volcano_lab, request.node.name) as page:
        open_panel(page, "cluster")
        check = page.locator(".jp-PAI-permissions")
        held = len(required("volcano"))
        expect(check).to_contain_text(
            f"All {held} permissions the volcano flavour needs are held.", timeout=20_000
        )
        expect(check.locator("[role='alert']")).to_have_count(0)
        expect(check).to_contain_text("scheduler (Volcano): served")
        shot(page, "permission-check-held")

        with without_binding(kube_cluster):
            open_panel(page, "jobs")  # the check is asked again when the view is shown
            open_panel(page, "cluster")
            alert = page.locator(".jp-PAI-permissions [role='alert']")
            namespaced = len([p for p in required("volcano") if not p.cluster])
            expect(alert).to_contain_text(
                f"{namespaced} permissions missing: ask your admin to bind jupyter-pai-user "
                "in namespace alice.",
                timeout=20_000,
            )
            expect(alert).to_contain_text(
                "cannot create, delete, list, patch, watch batch.volcano.sh/jobs in namespace "
                "alice: without it you cannot submit a job (its Volcano Job); delete"
            )
            expect(alert).to_contain_text("cannot get pods/log in namespace alice")
            expect(check).to_have_attribute("data-ok", "false")
            shot(page, "permission-check-missing")
