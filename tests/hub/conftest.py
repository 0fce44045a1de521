"""JupyterHub with KubeSpawner against the session's test cluster (tests/cluster): each
user's server is a pod that the cluster's pod runner really runs. Users sign in through
Chromium (the ``browser`` fixture of tests/ui); screenshots go where tests/ui puts them."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException

from tests.cluster import manifests
from tests.cluster.pytest_plugin import TestCluster, kube_cluster
from tests.hub.singleuser import singleuser_env
from tests.ui.conftest import browser, free_port

__all__ = ["browser", "hub", "kube_cluster"]

HERE = Path(__file__).resolve().parent
#: Where scripts/test.sh installs configurable-http-proxy (npm) when it is not on PATH.
CHP_CACHE = Path.home() / ".cache" / "jupyter-pai" / "chp" / "node_modules" / ".bin"
OWNED = "app.kubernetes.io/managed-by=jupyter-pai"
#: Where the hub "runs" (it is a local process): its ConfigMap's namespace.
HUB_NAMESPACE = "default"


def chp_path() -> str:
    found = shutil.which("configurable-http-proxy") or shutil.which(
        "configurable-http-proxy", path=str(CHP_CACHE)
    )
    if found is None:
        raise RuntimeError(
            "configurable-http-proxy (npm) is not installed: run ./scripts/test.sh, which "
            f"installs it into {CHP_CACHE.parent.parent}"
        )
    return found


@dataclass
class Hub:
    url: str  # the proxy's public URL, ending in "/"
    token: str  # the e2e service's token (admin of users and servers)
    password: str
    directory: Path
    cluster: TestCluster

    def raw(
        self,
        path: str,
        *,
        method: str = "GET",
        body: Any = None,
        token: str | None = None,
        timeout: float = 30,
    ) -> bytes:
        """``url + path`` (the hub's API, or a user's server through the proxy) with a
        hub token (the e2e service's by default)."""
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(
            self.url + path,
            data=data,
            method=method,
            headers={
                "Authorization": f"token {token or self.token}",
                "Content-Type": "application/json",
            },
        )
        with urllib.request.urlopen(req, timeout=timeout) as response:
            raw: bytes = response.read()
        return raw

    def request(self, path: str, **kwargs: Any) -> Any:
        raw = self.raw(path, **kwargs)
        return json.loads(raw) if raw else None

    def user_token(self, user: str) -> str:
        """A new API token of ``user``: what their server accepts as them."""
        made = self.request(
            f"hub/api/users/{user}/tokens", method="POST", body={"note": "e2e", "expires_in": 3600}
        )
        return str(made["token"])

    def spawn(self, user: str, server: str = "", timeout: float = 180) -> None:
        """Start ``user``'s (named) server and wait until the hub says it is ready."""
        path = (
            f"hub/api/users/{user}/servers/{server}" if server else f"hub/api/users/{user}/server"
        )
        with contextlib.suppress(urllib.error.HTTPError):  # 400: already running
            self.request(path, method="POST", body={})
        deadline, seen = time.monotonic() + timeout, False
        while True:
            info = self.request(f"hub/api/users/{user}")
            state = info["servers"].get(server)
            if state and state.get("ready"):
                return
            # A spawn that failed leaves no server behind: no use waiting for it.
            if (seen and not state) or time.monotonic() > deadline:
                raise AssertionError(
                    f"{user}'s server {server!r} did not start: {info}\n{self.log()[-4000:]}"
                )
            seen = seen or bool(state)
            time.sleep(1)

    def pai(self, user: str, token: str, path: str, server: str = "", **kwargs: Any) -> Any:
        """JSON of ``user``'s jupyter-pai REST API (``/pai/api/<path>``) through the proxy."""
        return self.request(self._pai(user, server, path), token=token, **kwargs)

    def pai_text(self, user: str, token: str, path: str, server: str = "") -> str:
        return self.raw(self._pai(user, server, path), token=token).decode(errors="replace")

    @staticmethod
    def _pai(user: str, server: str, path: str) -> str:
        return f"user/{user}/{server + '/' if server else ''}pai/api/{path}"

    def log(self) -> str:
        return (self.directory / "hub.log").read_text(errors="replace")


def _wait_http(url: str, proc: subprocess.Popen[bytes], log: Path, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            urllib.request.urlopen(url, timeout=2)
            return
        except urllib.error.HTTPError as error:
            if error.code != 404:  # 404: the proxy is up, the hub's route not yet
                return
            time.sleep(0.5)
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(
                    f"JupyterHub did not start:\n{log.read_text(errors='replace')[-4000:]}"
                ) from None
            time.sleep(0.5)


@contextlib.contextmanager
def run_hub(cluster: TestCluster, base: Path, flavor: str) -> Iterator[Hub]:
    """JupyterHub (tests/hub/jupyterhub_config.py) on loopback ports with its sqlite in
    ``base``, spawning on ``cluster`` with jupyter-pai on ``flavor``; its users' servers
    and their jobs are removed after."""
    lab_settings = base / "lab-settings"
    (lab_settings / "@jupyterlab" / "apputils-extension").mkdir(parents=True)
    (
        lab_settings / "@jupyterlab" / "apputils-extension" / "notification.jupyterlab-settings"
    ).write_text('{"fetchNews": "false"}')
    (lab_settings / "jupyter-pai").mkdir()
    (lab_settings / "jupyter-pai" / "plugin.jupyterlab-settings").write_text(
        '{"refreshInterval": 1}'
    )
    server_json = json.dumps(
        {
            "KubernetesBackend": {"node_selector": {manifests.RUNNER_LABEL: "true"}},
            "LabApp": {"news_url": ""},
            # The pod runner runs pods as this machine's user: root here.
            "ServerApp": {"allow_root": True},
        }
    )
    # The admin's ConfigMap in the hub's namespace, which configure_kubespawner copies
    # into each user's namespace.
    config_map = {
        "metadata": {"name": "jupyter-pai-config", "namespace": HUB_NAMESPACE},
        "data": {"jupyter_server_config.json": server_json},
    }
    core = cluster.core()
    with contextlib.suppress(ApiException):  # 404: none left by an earlier run
        core.delete_namespaced_config_map("jupyter-pai-config", HUB_NAMESPACE)
    core.create_namespaced_config_map(HUB_NAMESPACE, config_map)
    # The test cluster made alice's and bob's namespaces, not the hub: as an admin gives the
    # hub a namespace made by hand for a user (docs/admin.md), they are marked theirs.
    for user in USERS:
        core.patch_namespace(user, _given_to(user))
    port, token, password = free_port(), secrets.token_hex(16), secrets.token_hex(8)
    env = {
        **os.environ,
        "KUBECONFIG": str(cluster.kubeconfig),
        "POD_NAMESPACE": HUB_NAMESPACE,
        "JUPYTER_PAI_HUB_PORT": str(port),
        "JUPYTER_PAI_HUB_API_PORT": str(free_port()),
        "JUPYTER_PAI_HUB_PROXY_API_PORT": str(free_port()),
        "JUPYTER_PAI_HUB_CHP": chp_path(),
        "JUPYTER_PAI_HUB_DIR": str(base),
        "JUPYTER_PAI_HUB_PASSWORD": password,
        "JUPYTER_PAI_HUB_SERVICE_TOKEN": token,
        "JUPYTER_PAI_HUB_FLAVOR": flavor,
        "JUPYTER_PAI_HUB_SINGLEUSER": str(singleuser_env() / "bin" / "jupyterhub-singleuser"),
        "JUPYTER_PAI_HUB_LAB_SETTINGS": str(lab_settings),
    }
    log_path = base / "hub.log"
    log = open(log_path, "wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "jupyterhub", "-f", str(HERE / "jupyterhub_config.py")],
        cwd=base,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}/"
    hub = Hub(url=url, token=token, password=password, directory=base, cluster=cluster)
    try:
        _wait_http(f"{url}hub/api/", proc, log_path, timeout=90)
        yield hub
    finally:
        _keep_server_logs(cluster, base)
        # The hub stops its users' servers on exit (cleanup_servers): their pods go.
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
        log.close()
        _remove_leftovers(cluster)
        for user in USERS:
            core.patch_namespace(user, _given_to(None))


USERS = ("alice", "bob")


def _given_to(user: str | None) -> dict[str, Any]:
    """The label and annotation that make a namespace the hub's to give ``user`` (None:
    no one's)."""
    return {
        "metadata": {
            "labels": {"jupyter-pai/managed": "true" if user else None},
            "annotations": {"jupyter-pai/user": user},
        }
    }


def _keep_server_logs(cluster: TestCluster, base: Path) -> None:
    """Each user server's log, to ``base/<namespace>_<pod>.log`` (a failure's evidence:
    the pods go with the hub)."""
    core = cluster.core()
    for namespace in ("alice", "bob"):
        for pod in core.list_namespaced_pod(
            namespace, label_selector="component=singleuser-server"
        ).items:
            name = pod.metadata.name
            with contextlib.suppress(ApiException):
                text = core.read_namespaced_pod_log(name, namespace)
                (base / f"{namespace}_{name}.log").write_text(text)


def _remove_leftovers(cluster: TestCluster) -> None:
    """The users' jobs and any server pod the hub left (a failed test's)."""
    core = cluster.core()
    core.delete_namespaced_config_map("jupyter-pai-config", HUB_NAMESPACE)
    for namespace in ("alice", "bob"):
        for group, version, plural in (
            ("batch.volcano.sh", "v1alpha1", "jobs"),
            ("jobset.x-k8s.io", "v1alpha2", "jobsets"),
        ):
            with contextlib.suppress(ApiException):  # 404: a CRD left out of this cluster
                cluster.custom().delete_collection_namespaced_custom_object(
                    group, version, namespace, plural, label_selector=OWNED
                )
        core.delete_collection_namespaced_config_map(namespace, label_selector=OWNED)
        core.delete_collection_namespaced_pod(
            namespace, label_selector="component=singleuser-server", grace_period_seconds=0
        )


@pytest.fixture(scope="module")
def hub(kube_cluster: TestCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hub]:
    """The hub for a module: jupyter-pai on the volcano flavor (a named server ``kueue``
    runs it on kueue)."""
    with run_hub(kube_cluster, tmp_path_factory.mktemp("hub"), "volcano") as started:
        yield started
