"""JupyterLab whose jupyter-pai talks to the test cluster as alice (namespace alice), native
flavor, for the UI tests on Kubernetes; her jobs' objects are removed when it ends."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from kubernetes import client

from tests.cluster.pytest_plugin import TestCluster

from .conftest import Lab, run_lab

OWNED = "app.kubernetes.io/managed-by=jupyter-pai"


@contextlib.contextmanager
def alice_lab(cluster: TestCluster, folder: Path, node_selector: dict[str, str]) -> Iterator[Lab]:
    """``node_selector``: where her pods go (the runner node, where they really run, or a
    pool of simulated GPU nodes)."""
    config = {
        "PAIConfig": {"backend": "kubernetes"},
        "KubernetesBackend": {
            "kubeconfig": str(cluster.user_kubeconfigs["alice"]),
            "flavor": "native",
            "user": "alice",
            "node_selector": node_selector,
        },
    }
    with run_lab(folder, server_config=config) as lab:
        lab.explain = lambda: cluster.explain("alice", OWNED)
        yield lab
    api = cluster.api()
    core = client.CoreV1Api(api)
    client.BatchV1Api(api).delete_collection_namespaced_job(
        "alice", label_selector=OWNED, propagation_policy="Background"
    )
    core.delete_collection_namespaced_config_map("alice", label_selector=OWNED)
    core.delete_collection_namespaced_pod("alice", label_selector=OWNED, grace_period_seconds=0)
