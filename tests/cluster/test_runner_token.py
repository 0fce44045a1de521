"""The pod runner gives each pod its service account, as kubelet does: a token from the
TokenRequest API bound to the pod, the cluster CA and the namespace, at
/var/run/secrets/kubernetes.io/serviceaccount in the pod's own mount namespace, where
the client libraries' in-cluster configuration reads."""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException

from . import manifests, podenv
from .pytest_plugin import TestCluster, kube_cluster

__all__ = ["kube_cluster"]

# Configures itself from the mounted files, asks the API server who it is, and prints
# that with a short digest of its token (never the token itself).
WHOAMI = (
    "import hashlib, pathlib\n"
    "from kubernetes import client, config\n"
    "sa = pathlib.Path('/var/run/secrets/kubernetes.io/serviceaccount')\n"
    "if not (sa / 'token').exists():\n"
    "    print('no-token'); raise SystemExit(0)\n"
    "config.load_incluster_config()\n"
    "body = {'apiVersion': 'authentication.k8s.io/v1', 'kind': 'SelfSubjectReview'}\n"
    "review = client.AuthenticationV1Api().create_self_subject_review(body)\n"
    "digest = hashlib.sha256((sa / 'token').read_bytes()).hexdigest()[:16]\n"
    "print(review.status.user_info.username, (sa / 'namespace').read_text(), digest)\n"
)


def wait_for(check: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.25)
    raise AssertionError(f"timed out after {timeout}s: {what}")


@pytest.fixture
def namespace(kube_cluster: TestCluster) -> Iterator[str]:
    """A namespace of its own (the cluster may be shared), once its `default` service
    account and CA ConfigMap exist (admission refuses pods before the first)."""
    core = kube_cluster.core()
    name = f"sa-token-{secrets.token_hex(3)}"
    core.create_namespace({"metadata": {"name": name}})

    def ready() -> bool:
        try:
            core.read_namespaced_service_account("default", name)
            core.read_namespaced_config_map("kube-root-ca.crt", name)
        except ApiException:
            return False
        return True

    wait_for(ready, 60, f"service account default and kube-root-ca.crt in {name}")
    yield name
    core.delete_namespace(name, grace_period_seconds=0)


def run_whoami(core: Any, namespace: str, name: str, **spec: Any) -> str:
    pod = {
        "metadata": {"name": name},
        "spec": {
            "restartPolicy": "Never",
            "nodeSelector": {manifests.RUNNER_LABEL: "true"},
            "containers": [
                {"name": "main", "image": "python:3", "command": ["python", "-c", WHOAMI]}
            ],
            **spec,
        },
    }
    core.create_namespaced_pod(namespace, pod)

    def done() -> bool:
        phase = core.read_namespaced_pod(name, namespace).status.phase
        return phase in ("Succeeded", "Failed")

    wait_for(done, 60, f"pod {name} ends")
    out = str(core.read_namespaced_pod_log(name, namespace)).strip()
    assert core.read_namespaced_pod(name, namespace).status.phase == "Succeeded", out
    return out


@pytest.mark.kube
def test_pods_get_their_own_service_account_tokens(
    kube_cluster: TestCluster, namespace: str
) -> None:
    core = kube_cluster.core()
    core.create_namespaced_service_account(namespace, {"metadata": {"name": "worker"}})
    first = run_whoami(core, namespace, "first").split()
    second = run_whoami(core, namespace, "second").split()
    other = run_whoami(core, namespace, "other", serviceAccountName="worker").split()
    assert first[:2] == [f"system:serviceaccount:{namespace}:default", namespace]
    assert second[:2] == first[:2]
    assert other[:2] == [f"system:serviceaccount:{namespace}:worker", namespace]
    # Bound to each pod: one token per pod, even for the same service account.
    assert len({first[2], second[2], other[2]}) == 3


@pytest.mark.kube
def test_no_token_where_automount_is_off(kube_cluster: TestCluster, namespace: str) -> None:
    core = kube_cluster.core()
    off = run_whoami(core, namespace, "pod-off", automountServiceAccountToken=False)
    assert off == "no-token"
    core.create_namespaced_service_account(
        namespace, {"metadata": {"name": "quiet"}, "automountServiceAccountToken": False}
    )
    assert run_whoami(core, namespace, "sa-off", serviceAccountName="quiet") == "no-token"


def test_projected_files_as_kubelet_writes_them() -> None:
    pod = {"metadata": {"name": "p", "namespace": "alice", "uid": "u"}, "spec": {}}
    sources = [
        {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
        {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
        {
            "downwardAPI": {
                "items": [{"path": "namespace", "fieldRef": {"fieldPath": "metadata.namespace"}}]
            }
        },
    ]
    asked: list[tuple[str | None, int]] = []

    def token(audience: str | None, seconds: int) -> str:
        asked.append((audience, seconds))
        return "tok"

    def lookup(kind: str, namespace: str, name: str) -> dict[str, str] | None:
        return {"ca.crt": "CA"} if (kind, namespace, name) == ("ConfigMap", "alice", name) else None

    files = podenv.projected_files(pod, sources, lookup, token)
    assert files == {"token": "tok", "ca.crt": "CA", "namespace": "alice"}
    assert asked == [(None, 3607)]
    with pytest.raises(podenv.EnvError, match=r"ConfigMap 'kube-root-ca\.crt' not found"):
        podenv.projected_files(pod, sources, lambda *_: None, token)


@pytest.mark.kube
def test_a_config_map_volume_is_its_files_at_the_mount_path(
    kube_cluster: TestCluster, namespace: str
) -> None:
    """As a server's configuration reaches it under JupyterHub: a ConfigMap volume."""
    core = kube_cluster.core()
    core.create_namespaced_config_map(
        namespace, {"metadata": {"name": "conf"}, "data": {"settings.json": '{"a": 1}'}}
    )
    name = "reads-config"
    core.create_namespaced_pod(
        namespace,
        {
            "metadata": {"name": name},
            "spec": {
                "restartPolicy": "Never",
                "nodeSelector": {manifests.RUNNER_LABEL: "true"},
                "volumes": [{"name": "conf", "configMap": {"name": "conf"}}],
                "containers": [
                    {
                        "name": "main",
                        "image": "python:3",
                        "command": ["cat", "/etc/jupyter-pai-test/conf.d/settings.json"],
                        "volumeMounts": [
                            {"name": "conf", "mountPath": "/etc/jupyter-pai-test/conf.d"}
                        ],
                    }
                ],
            },
        },
    )

    def done() -> bool:
        return core.read_namespaced_pod(name, namespace).status.phase in ("Succeeded", "Failed")

    wait_for(done, 60, f"pod {name} ends")
    assert core.read_namespaced_pod_log(name, namespace).strip() == '{"a": 1}'
    assert core.read_namespaced_pod(name, namespace).status.phase == "Succeeded"


def test_file_volumes_take_config_maps_and_secrets_as_projected_sources() -> None:
    pod = {
        "spec": {
            "volumes": [
                {"name": "conf", "configMap": {"name": "c"}},
                {"name": "keys", "secret": {"secretName": "s", "optional": True}},
                {"name": "data", "persistentVolumeClaim": {"claimName": "d"}},
            ]
        }
    }
    assert podenv.file_volumes(pod) == {
        "conf": [{"configMap": {"name": "c"}}],
        "keys": [{"secret": {"name": "s", "optional": True}}],
    }
