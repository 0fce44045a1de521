"""A Jupyter server with jupyter-pai on the Kubernetes backend of the test cluster (user
alice, pods on the runner nodes, once per flavor: ``flavor``) for REST tests: ``import *``
its fixtures."""

from __future__ import annotations

from typing import Any

import pytest

from tests.cluster import manifests
from tests.cluster.pytest_plugin import TestCluster
from tests.jupyter_fixtures import *  # noqa: F403


@pytest.fixture
def jp_server_config(kube_cluster: TestCluster, flavor: str) -> dict[str, Any]:
    return {
        "ServerApp": {"jpserver_extensions": {"jupyter_pai": True}, "allow_root": True},
        "PAIConfig": {"backend": "kubernetes"},
        "KubernetesBackend": {
            "kubeconfig": str(kube_cluster.user_kubeconfigs["alice"]),
            "flavor": flavor,
            "user": "alice",
            "node_selector": {manifests.RUNNER_LABEL: "true"},
        },
    }
