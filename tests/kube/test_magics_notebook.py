"""The ``%pai`` magics in a real kernel on the test cluster, once per flavor:
``tests/notebooks/magics.ipynb`` executed with nbclient, the kernel's client on the
Kubernetes backend as user alice (pods on the runner node really run the cell)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from traitlets.config import Config

from jupyter_pai import Client
from tests.cluster.pytest_plugin import TestCluster
from tests.kube.test_backend_jobs import NS, RUNNER, _cleanup
from tests.notebook_run import check_magics_notebook

pytestmark = pytest.mark.kube


async def test_magics_notebook_on_the_cluster(
    kube_cluster: TestCluster, flavor: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kubeconfig = str(kube_cluster.user_kubeconfigs["alice"])
    settings = {"KubernetesBackend": {"node_selector": RUNNER}}
    config_dir = tmp_path / "jupyter-config"
    config_dir.mkdir()
    (config_dir / "jupyter_pai_config.json").write_text(json.dumps(settings))
    # What the kernel (a child process) reads: the same settings as the client here.
    for name, value in {
        "JUPYTER_PAI_BACKEND": "kubernetes",
        "JUPYTER_PAI_FLAVOR": flavor,
        "JUPYTER_PAI_USER": "alice",
        "KUBECONFIG": kubeconfig,
        "JUPYTER_CONFIG_DIR": str(config_dir),
    }.items():
        monkeypatch.setenv(name, value)
    _cleanup(kube_cluster, NS)
    client = Client(
        backend="kubernetes",
        config=Config({"KubernetesBackend": {**settings["KubernetesBackend"], "flavor": flavor}}),
    )
    try:
        await check_magics_notebook(tmp_path, client)
    finally:
        await client.close_async()
        _cleanup(kube_cluster, NS)
