"""The tutorials on the test cluster: nbclient executes examples/getting-started.ipynb
(once per flavor) and examples/pytorch-ddp.ipynb with the kernel's client on the
Kubernetes backend as user alice (pods on the runner node really run), and checks what
they printed as on the local backend."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import nbformat
import pytest

from jupyter_pai.submission.parameters import inject_parameters
from tests.cluster.pytest_plugin import TestCluster
from tests.kube.test_backend_jobs import NS, RUNNER, _cleanup
from tests.kube.test_backend_storage import drop_volume, make_volume
from tests.tutorials import (
    EXAMPLES,
    check_getting_started,
    check_pytorch_ddp,
    execute_command,
    python,
    read,
)

pytestmark = pytest.mark.kube


def alice_env(cluster: TestCluster, flavor: str, tmp_path: Path) -> dict[str, str]:
    """A notebook kernel's environment: the Kubernetes backend as alice, pods on the runner."""
    config_dir = tmp_path / "jupyter-config"
    config_dir.mkdir()
    settings = {"KubernetesBackend": {"node_selector": RUNNER}}
    (config_dir / "jupyter_pai_config.json").write_text(json.dumps(settings))
    return {
        **{k: v for k, v in os.environ.items() if not k.startswith("JUPYTER_PAI")},
        "JUPYTER_PAI_BACKEND": "kubernetes",
        "JUPYTER_PAI_FLAVOR": flavor,
        "JUPYTER_PAI_USER": "alice",
        "KUBECONFIG": str(cluster.user_kubeconfigs["alice"]),
        "JUPYTER_CONFIG_DIR": str(config_dir),
    }


def execute(notebook: Path, env: dict[str, str], timeout: int) -> None:
    done = subprocess.run(
        execute_command(python(), notebook, timeout),
        env=env,
        cwd=notebook.parent,
        capture_output=True,
        text=True,
        timeout=timeout + 120,
    )
    assert done.returncode == 0, f"the notebook failed:\n{done.stderr[-6000:]}"


def test_getting_started_on_the_cluster(
    kube_cluster: TestCluster, flavor: str, tmp_path: Path
) -> None:
    env = alice_env(kube_cluster, flavor, tmp_path)
    work = tmp_path / "examples"
    shutil.copytree(EXAMPLES, work)
    notebook = work / "getting-started.ipynb"
    _cleanup(kube_cluster, NS)
    try:
        execute(notebook, env, 240)
        check_getting_started(read(notebook), backend="kubernetes")
    finally:
        _cleanup(kube_cluster, NS)


def test_pytorch_ddp_on_the_cluster(kube_cluster: TestCluster, tmp_path: Path) -> None:
    """The notebook's folder is a storage (a hostPath PV, as a home on a shared volume):
    its `storage` parameter names it, so both torchrun pods mount it and start there,
    where the notebook wrote ddp_train.py. Volcano only, the default flavor: torch's
    start makes this the suite's slowest tutorial, and the flavors' gang and rendezvous
    are covered per flavor elsewhere."""
    work = tmp_path / "examples"
    shutil.copytree(EXAMPLES, work)
    volume = make_volume(kube_cluster, tmp_path, root=work)
    notebook = work / "pytorch-ddp.ipynb"
    nb = inject_parameters(nbformat.read(notebook, as_version=4), {"storage": volume.claim})
    nbformat.write(nb, notebook)
    _cleanup(kube_cluster, NS)
    try:
        execute(notebook, alice_env(kube_cluster, "volcano", tmp_path), 400)
        check_pytorch_ddp(read(notebook))
    finally:
        _cleanup(kube_cluster, NS)
        drop_volume(kube_cluster, volume)
