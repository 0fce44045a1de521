"""The remote-GPU-kernel tutorial on the test cluster: nbclient executes
examples/remote-gpu-kernel.ipynb; the kernelspec it installs starts its kernel as a job on
the runner node (as alice), which holds a GPU until the notebook shuts it down. Once per
flavor that remote kernels cover (native, volcano; as tests/kube/test_kernels.py)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.cluster.pytest_plugin import TestCluster
from tests.kube.test_backend_jobs import NS, RUNNER, _cleanup
from tests.tutorials import EXAMPLES, check_remote_gpu_kernel, execute_command, python, read

pytestmark = pytest.mark.kube


@pytest.fixture(params=("native", "volcano"))
def flavor(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def test_remote_gpu_kernel_on_the_cluster(
    kube_cluster: TestCluster, flavor: str, tmp_path: Path
) -> None:
    config_dir = tmp_path / "jupyter-config"
    config_dir.mkdir()
    settings = {"KubernetesBackend": {"node_selector": RUNNER}}
    (config_dir / "jupyter_pai_config.json").write_text(json.dumps(settings))
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("JUPYTER_PAI")},
        "PATH": os.pathsep.join([str(Path(python()).parent), os.environ["PATH"]]),
        "JUPYTER_PAI_BACKEND": "kubernetes",
        "JUPYTER_PAI_FLAVOR": flavor,
        "JUPYTER_PAI_USER": "alice",
        "KUBECONFIG": str(kube_cluster.user_kubeconfigs["alice"]),
        "JUPYTER_CONFIG_DIR": str(config_dir),
        "JUPYTER_DATA_DIR": str(tmp_path / "jupyter-data"),
    }
    work = tmp_path / "examples"
    shutil.copytree(EXAMPLES, work)
    notebook = work / "remote-gpu-kernel.ipynb"
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
        check_remote_gpu_kernel(read(notebook), backend="kubernetes")
    finally:
        _cleanup(kube_cluster, NS)
