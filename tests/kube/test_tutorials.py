"""The getting-started tutorial on the test cluster, once per flavour: nbclient executes
examples/getting-started.ipynb with the kernel's client on the Kubernetes backend as user
alice (pods on the runner node really run), and checks what it printed as on the local
backend — client, magics, widgets."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.cluster.pytest_plugin import TestCluster
from tests.kube.test_backend_jobs import NS, RUNNER, _cleanup
from tests.tutorials import (
    EXAMPLES,
    check_getting_started,
    execute_command,
    python,
    read,
)

pytestmark = pytest.mark.kube


def test_getting_started_on_the_cluster(
    kube_cluster: TestCluster, flavor: str, tmp_path: Path
) -> None:
    config_dir = tmp_path / "jupyter-config"
    config_dir.mkdir()
    settings = {"KubernetesBackend": {"node_selector": RUNNER}}
    (config_dir / "jupyter_pai_config.json").write_text(json.dumps(settings))
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("JUPYTER_PAI")},
        "JUPYTER_PAI_BACKEND": "kubernetes",
        "JUPYTER_PAI_FLAVOR": flavor,
        "JUPYTER_PAI_USER": "alice",
        "KUBECONFIG": str(kube_cluster.user_kubeconfigs["alice"]),
        "JUPYTER_CONFIG_DIR": str(config_dir),
    }
    work = tmp_path / "examples"
    shutil.copytree(EXAMPLES, work)
    notebook = work / "getting-started.ipynb"
    _cleanup(kube_cluster, NS)
    try:
        done = subprocess.run(
            execute_command(python(), notebook, 240),
            env=env,
            cwd=work,
            capture_output=True,
            text=True,
            timeout=360,
        )
        assert done.returncode == 0, f"the notebook failed:\n{done.stderr[-6000:]}"
        check_getting_started(read(notebook), backend="kubernetes")
    finally:
        _cleanup(kube_cluster, NS)
