"""pytest fixture `kube_cluster`: one real control plane per test session.

Use it with `pytest_plugins = ["tests.cluster.pytest_plugin"]`. A cluster that cannot
start fails the tests (never skips). `JUPYTER_PAI_TEST_CLUSTER_DIR` points at a cluster
already started with `python -m tests.cluster up --dir …` to reuse it (not torn down).
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from . import controlplane, explain, hived, kube, manifests


@dataclass
class TestCluster:
    __test__ = False  # not a test class, whatever pytest thinks of the name

    state: controlplane.State

    @property
    def kubeconfig(self) -> Path:
        return Path(self.state.kubeconfig)

    @property
    def user_kubeconfigs(self) -> dict[str, Path]:
        return {user: Path(path) for user, path in self.state.users.items()}

    @property
    def runner_nodes(self) -> list[str]:
        return list(self.state.runner_nodes)

    @property
    def gpu_nodes(self) -> list[str]:
        return list(self.state.gpu_nodes)

    @property
    def hived_url(self) -> str:
        """HiveD's web server (``KubernetesBackend.hived_url``); "" where HiveD is left out."""
        return hived.web_url(Path(self.state.directory)) or ""

    def backend_env(self) -> dict[str, str]:
        """What a hived-flavored backend here needs besides its flavor (the VCs' address,
        the CPU SKU), as the variables that servers and kernels started by tests read."""
        return {"JUPYTER_PAI_HIVED_URL": self.hived_url, "JUPYTER_PAI_HIVED_CPU_SKU": hived.CPU_SKU}

    def api(self, user: str | None = None) -> Any:
        """A `kubernetes.client.ApiClient` as the admin, or as a restricted user."""
        return kube.api_client(self.user_kubeconfigs[user] if user else self.kubeconfig)

    def core(self, user: str | None = None) -> Any:
        """CoreV1Api as the admin or `user`."""
        return kube.core(self.api(user))

    def batch(self, user: str | None = None) -> Any:
        return kube.batch(self.api(user))

    def custom(self, user: str | None = None) -> Any:
        return kube.custom(self.api(user))

    def add_nodes(self, shape: manifests.NodeShape, timeout: float = 60) -> list[str]:
        """Add simulated nodes `<pool>-<i>` labelled `jupyter-pai.test/pool=<pool>` (and
        the shape's labels and extended resources: a GPU type's, a MIG node's); pods
        choose them with that label as node selector."""
        api = self.api()
        names = shape.names()
        kube.apply(api, manifests.nodes(shape))
        core = kube.core(api)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            ready = {
                node.metadata.name
                for node in core.list_node(
                    label_selector=f"{manifests.POOL_LABEL}={shape.pool}"
                ).items
                for cond in node.status.conditions or []
                if cond.type == "Ready" and cond.status == "True"
            }
            if ready >= set(names):
                return names
            time.sleep(0.25)
        raise TimeoutError(f"nodes {names} not Ready after {timeout}s")

    def stop_apiserver(self, *, kill: bool = False) -> None:
        """Stop kube-apiserver alone (SIGTERM, its graceful shutdown; or SIGKILL); etcd and
        the other components keep running and retry."""
        controlplane.ControlPlane(Path(self.state.directory)).stop_process(
            "kube-apiserver", kill=kill
        )

    def start_apiserver(self, timeout: float = 60) -> None:
        """Start kube-apiserver again (same argv: same port, etcd, certificates, tokens)
        and wait for its /readyz."""
        controlplane.ControlPlane(Path(self.state.directory)).start_process(
            "kube-apiserver", timeout
        )

    def stop_etcd(self, *, kill: bool = False) -> None:
        """Stop etcd alone (SIGTERM or SIGKILL; its data directory stays): kube-apiserver
        keeps running and answers errors until etcd is back."""
        controlplane.ControlPlane(Path(self.state.directory)).stop_process("etcd", kill=kill)

    def start_etcd(self, timeout: float = 60) -> None:
        """Start etcd again on its data directory and ports, and wait for its health."""
        controlplane.ControlPlane(Path(self.state.directory)).start_process("etcd", timeout)

    def explain(self, namespace: str, selector: str | None = None) -> str:
        """The namespace's pods and Jobs as the API server has them, and what the runner
        and the controller manager logged of them: for a timeout's message."""
        return explain.pods_report(Path(self.state.directory), self.api(), namespace, selector)

    def remove_nodes(self, pool: str) -> None:
        core = self.core()
        nodes = core.list_node(label_selector=f"{manifests.POOL_LABEL}={pool}").items
        kube.delete_nodes(self.api(), [n.metadata.name for n in nodes])


@pytest.fixture(scope="session")
def kube_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestCluster]:
    reuse = os.environ.get("JUPYTER_PAI_TEST_CLUSTER_DIR")
    if reuse:
        plane = controlplane.ControlPlane(Path(reuse))
        state = controlplane.State.load(plane.directory)
        status = plane.status()
        if state is None or not status or not all(status.values()):
            raise RuntimeError(f"no running cluster in {reuse}: {status}")
        with environment(TestCluster(state).backend_env()):
            yield TestCluster(state)
        return
    with running_cluster(tmp_path_factory.mktemp("kube-cluster")) as cluster:
        with environment(cluster.backend_env()):
            yield cluster


@contextlib.contextmanager
def environment(variables: dict[str, str]) -> Iterator[None]:
    """``variables`` in the environment of the test process and its children, restored
    on exit (the session's cluster; a kernel's settings)."""
    saved = {k: os.environ.get(k) for k in variables}
    os.environ.update(variables)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@contextlib.contextmanager
def running_cluster(
    directory: Path, options: controlplane.Options | None = None
) -> Iterator[TestCluster]:
    """A control plane of its own in ``directory``, down again on exit (for tests that
    disturb the cluster itself, such as stopping kube-apiserver)."""
    plane = controlplane.ControlPlane(directory)
    state = plane.up(options or controlplane.Options(tie_to_parent=True))
    try:
        yield TestCluster(state)
    finally:
        plane.down()
