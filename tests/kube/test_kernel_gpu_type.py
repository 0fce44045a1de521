"""A remote kernel on a chosen GPU type: ``gpu_type`` in its kernelspec (what ``jupyter pai
kernelspec install --gpus T4-16GB:1`` writes) pins its pod to the nodes of that type. The
runner node (where pods really run) is labelled a T4 node for the test, as GPU Feature
Discovery labels one; the kernel answers from it. The flavor does not matter here (every
flavor's pods get the type's node affinity from one builder), so this runs on ``native``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from jupyter_client.manager import AsyncKernelManager
from traitlets.config import Config

from jupyter_pai.backends.kubernetes import KubernetesBackend
from jupyter_pai.kernels.backends import close_backends
from tests.cluster import kube
from tests.cluster.pytest_plugin import TestCluster
from tests.kernels import IDENTITY, run, write_kernelspec
from tests.kube.test_backend_jobs import NS, _cleanup, make_backend
from tests.kube.test_kernels import backend_config

pytestmark = pytest.mark.kube
FLAVOR = "native"
RUNNER_NODE = "runner-0"
T4 = {
    "nvidia.com/gpu.product": "Tesla-T4",
    "nvidia.com/gpu.memory": "15360",
    "nvidia.com/gpu.count": "4",
    "nvidia.com/gpu.family": "turing",
}


@pytest.fixture
def t4_runner(kube_cluster: TestCluster) -> Iterator[None]:
    core = kube.core(kube_cluster.api())
    core.patch_node(RUNNER_NODE, {"metadata": {"labels": T4}})
    try:
        yield
    finally:
        core.patch_node(RUNNER_NODE, {"metadata": {"labels": dict.fromkeys(T4)}})


@pytest.fixture
async def backend(
    kube_cluster: TestCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, t4_runner: None
) -> AsyncIterator[KubernetesBackend]:
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path))
    monkeypatch.setenv("JUPYTER_CONFIG_DIR", str(tmp_path / "config"))
    write_kernelspec(tmp_path, "pai-t4", gpus=1, gpu_type="T4-16GB")
    config = tmp_path / "config"
    config.mkdir()
    (config / "jupyter_pai_config.json").write_text(
        json.dumps(backend_config(kube_cluster, FLAVOR))
    )
    _cleanup(kube_cluster, NS)
    b = make_backend(kube_cluster, FLAVOR)
    await b.start()
    yield b
    await close_backends()
    await b.close()
    _cleanup(kube_cluster, NS)


async def test_a_kernel_runs_on_the_gpu_type_its_kernelspec_names(
    kube_cluster: TestCluster, backend: KubernetesBackend
) -> None:
    km = AsyncKernelManager(
        kernel_name="pai-t4", config=Config(backend_config(kube_cluster, FLAVOR))
    )
    await km.start_kernel()
    try:
        job_id = km.provisioner.job_id  # type: ignore[union-attr]
        out, reply = await run(km, IDENTITY)
        assert reply["status"] == "ok" and out.split()[1] == job_id
        job = await backend.get_job(job_id)
        assert job.spec["extras"]["hivedScheduler"]["taskRoles"]["kernel"]["skuType"] == "T4-16GB"
        [task] = job.tasks
        assert task.node == RUNNER_NODE
        core = kube.core(kube_cluster.api())
        pod = core.read_namespaced_pod(backend.running_pod(job), NS)
        terms = pod.spec.affinity.node_affinity.required_during_scheduling_ignored_during_execution
        wanted = [
            (e.key, e.operator, e.values)
            for t in terms.node_selector_terms
            for e in t.match_expressions or []
        ]
        assert ("nvidia.com/gpu.product", "In", ["Tesla-T4"]) in wanted
        [t4] = [t for vc in await backend.virtual_clusters() if vc.name == "default"
                for t in vc.gpu_types if t.name == "T4-16GB"]  # fmt: skip
        assert (t4.capacity, t4.used) == (4, 1)
    finally:
        await km.shutdown_kernel()


def test_the_kernelspec_installer_offers_the_vcs_types(
    kube_cluster: TestCluster, tmp_path: Path
) -> None:
    """``--gpus TYPE:N`` with a type the VC lacks is refused, naming the types it has with
    their free GPUs; one it has is written into the kernelspec."""
    env = {
        **os.environ,
        "JUPYTER_PAI_BACKEND": "kubernetes",
        "JUPYTER_PAI_FLAVOR": FLAVOR,
        "JUPYTER_PAI_USER": "alice",
        "JUPYTER_PAI_NAMESPACE": NS,
        "KUBECONFIG": str(kube_cluster.user_kubeconfigs["alice"]),
        "JUPYTER_DATA_DIR": str(tmp_path),
        "JUPYTER_CONFIG_PATH": str(tmp_path / "no-config"),
    }

    def install(gpus: str) -> subprocess.CompletedProcess[str]:
        argv = ["kernelspec", "install", "typed", "--vc", "default", "--gpus", gpus]
        command = [sys.executable, "-m", "jupyter_pai.cli", *argv]
        return subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)

    refused = install("V100-16GB:1")
    assert refused.returncode == 2, refused.stderr
    assert "--gpus: VC default has no GPU type 'V100-16GB'" in refused.stderr
    assert "A100-40GB (" in refused.stderr and " of 16 free)" in refused.stderr
    assert not (tmp_path / "kernels" / "typed").exists()
    written = install("H100-80GB:2")
    assert written.returncode == 0, written.stderr
    spec = json.loads((tmp_path / "kernels" / "typed" / "kernel.json").read_text())
    assert spec["metadata"]["kernel_provisioner"]["config"]["gpu_type"] == "H100-80GB"
