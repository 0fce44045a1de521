"""docs/admin.md followed as written: the commands it marks `<!-- run -->` run in order,
from a folder that has the checkout's `deploy/`, with the pinned `helm` and a cluster
admin's kubeconfig, against a control plane of their own that has Volcano (as the
admin's cluster would before jupyter-pai). After each step the cluster holds what the
page says it does."""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from tests.cluster import controlplane
from tests.cluster.helm import ensure_helm
from tests.cluster.pytest_plugin import TestCluster, running_cluster

pytestmark = pytest.mark.kube

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "admin.md"
# A marker line, then a fenced shell block: what an admin types, run here verbatim.
RUN_BLOCK = re.compile(r"<!-- run -->\n```sh\n(.*?)```", re.S)
STEP_TIMEOUT = 180


def marked_steps(text: str) -> list[tuple[str, str]]:
    """(the section's heading, the block) for each marked block, in the page's order."""
    steps = []
    for match in RUN_BLOCK.finditer(text):
        headings = re.findall(r"^#+ (.+)$", text[: match.start()], re.M)
        steps.append((headings[-1], match.group(1)))
    return steps


@pytest.fixture(scope="module")
def admin_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestCluster]:
    """Volcano beside kube-apiserver; no Kueue or HiveD (the guide installs for Volcano)."""
    options = controlplane.Options(tie_to_parent=True, kueue=False, hived=False)
    with running_cluster(tmp_path_factory.mktemp("admin-doc-cluster"), options) as cluster:
        yield cluster


def _queues(cluster: TestCluster) -> dict[str, Any]:
    listing = cluster.custom().list_cluster_custom_object(
        "scheduling.volcano.sh", "v1beta1", "queues"
    )
    return {q["metadata"]["name"]: q["spec"] for q in listing["items"]}


def _exists(read: Any) -> bool:
    try:
        read()
    except ApiException as error:
        if error.status == 404:
            return False
        raise
    return True


def test_the_admin_guide_installs_adds_a_vc_upgrades_and_uninstalls(
    admin_cluster: TestCluster, tmp_path: Path
) -> None:
    steps = marked_steps(GUIDE.read_text())
    assert [heading for heading, _ in steps] == [
        "2. The chart",
        "Adding a virtual cluster",
        "Upgrading",
        "Uninstalling",
    ]
    (tmp_path / "deploy").symlink_to(ROOT / "deploy")
    env = {
        **os.environ,
        "KUBECONFIG": str(admin_cluster.kubeconfig),
        "PATH": os.pathsep.join([str(ensure_helm().parent), os.environ["PATH"]]),
        "HELM_CACHE_HOME": str(tmp_path / ".helm-cache"),
        "HELM_CONFIG_HOME": str(tmp_path / ".helm-config"),
        "HELM_DATA_HOME": str(tmp_path / ".helm-data"),
    }
    rbac = client.RbacAuthorizationV1Api(admin_cluster.api())
    core = admin_cluster.core()

    def run(index: int) -> None:
        heading, script = steps[index]
        done = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", script],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=STEP_TIMEOUT,
        )
        assert done.returncode == 0, f"{heading}:\n{script}\n{done.stdout}\n{done.stderr}"

    run(0)  # install
    queues = _queues(admin_cluster)
    assert queues["default"]["deserved"] == {"nvidia.com/gpu": "24"}, queues["default"]
    assert queues["research"]["deserved"] == {"nvidia.com/gpu": "8"}, queues["research"]
    assert "capability" in queues["research"]  # research does not borrow
    for role in ("jupyter-pai-user", "jupyter-pai-cluster-reader", "jupyter-pai-hub"):
        assert _exists(lambda role=role: rbac.read_cluster_role(role)), role
    config = core.read_namespaced_config_map("jupyter-pai-config", "jhub")
    assert (
        "pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime" in config.data["jupyter_server_config.json"]
    )
    policies = client.AdmissionregistrationV1Api(admin_cluster.api())
    names = {p.metadata.name for p in policies.list_validating_admission_policy().items}
    assert len(names) >= 2, names  # the hub's confinement and Volcano's queue policy

    run(1)  # a VC added
    assert _queues(admin_cluster)["vision"]["deserved"] == {"nvidia.com/gpu": "4"}

    run(2)  # upgraded with the same values: the VC added stays
    assert set(_queues(admin_cluster)) >= {"default", "research", "vision"}

    run(3)  # uninstalled
    assert "vision" not in _queues(admin_cluster)
    assert not _exists(lambda: rbac.read_cluster_role("jupyter-pai-user"))
    assert not _exists(lambda: core.read_namespaced_config_map("jupyter-pai-config", "jhub"))
