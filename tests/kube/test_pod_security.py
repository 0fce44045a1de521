"""Pod Security on the real control plane: the users' namespaces enforce ``baseline`` (as
the hub makes them), so a user who may create pods cannot get root on a node — not with a
bare privileged ``hostPath`` pod of their own, nor with the same spec inside a Volcano Job,
a JobSet or a Job, whose controllers' pods the API server refuses alike. And every pod
jupyter-pai makes (each flavor's tasks, a remote kernel, a storage helper) passes its
level: ``baseline`` as built by default, ``restricted`` with ``pod_security=restricted``,
and the user's server as KubeSpawner makes it with the hub's hook (server-side dry runs
through the API server's own PodSecurity admission)."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Iterator
from types import SimpleNamespace
from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException

from jupyter_pai.backends.kubernetes.flavors import FLAVORS, HivedSettings
from jupyter_pai.backends.kubernetes.naming import make_names
from jupyter_pai.backends.kubernetes.pods import PodOptions
from jupyter_pai.backends.kubernetes.podsecurity import LEVELS, PodSecurity
from jupyter_pai.backends.kubernetes.storage import HelperPods
from jupyter_pai.hub import hooks
from jupyter_pai.hub.objects import HubSettings
from jupyter_pai.kernels.jobspec import KernelRequest, kernel_job
from jupyter_pai.spec import parse_job
from jupyter_pai.spec.protocol import JobProtocol
from tests.cluster import manifests
from tests.cluster.pytest_plugin import TestCluster
from tests.podspecs import jobset, pod_templates

pytestmark = pytest.mark.kube

REFUSED = 'violates PodSecurity "baseline:latest"'
WAIT = 60.0

#: Root on the node: the host's PID namespace, its root folder, a privileged container,
#: on a node of the attacker's choice.
ROOT_ON_THE_NODE: dict[str, Any] = {
    "hostPID": True,
    "nodeName": "gpu-0",
    "restartPolicy": "Never",
    "containers": [
        {
            "name": "main",
            "image": "busybox",
            "command": ["chroot", "/host"],
            "securityContext": {"privileged": True},
            "volumeMounts": [{"name": "host", "mountPath": "/host"}],
        }
    ],
    "volumes": [{"name": "host", "hostPath": {"path": "/"}}],
}

GPU_JOB = """
protocolVersion: 2
name: every-pod
type: job
secrets: {token: s3cr3t}
taskRoles:
  ps:
    instances: 1
    resourcePerInstance: {cpu: 1, memoryMB: 512, gpu: 0}
    commands: ['echo ps']
  worker:
    instances: 2
    extraContainerOptions: {shmMB: 64}
    resourcePerInstance: {cpu: 1, memoryMB: 512, gpu: 1, ports: {http: 1}}
    commands: ['echo worker']
"""


def _refused_pods(kube_cluster: TestCluster, kind: str, name: str) -> str:
    """The message of the controller's FailedCreate for ``kind`` ``name``, once there is one;
    meanwhile no pod of it exists."""
    core = kube_cluster.core()
    deadline = time.monotonic() + WAIT
    while True:
        events = core.list_namespaced_event(
            "alice", field_selector=f"involvedObject.name={name},involvedObject.kind={kind}"
        ).items
        # Volcano quotes the API server's message as Go writes a struct: \" for ".
        messages = [(e.reason, (e.message or "").replace('\\"', '"')) for e in events]
        found = [m for reason, m in messages if reason == "FailedCreate" and REFUSED in m]
        if found:
            return str(found[0])
        assert time.monotonic() < deadline, (
            f"no FailedCreate for {kind} {name} naming PodSecurity: "
            f"{messages}\n{kube_cluster.explain('alice')}"
        )
        time.sleep(0.5)


def _no_pods_of(kube_cluster: TestCluster, prefix: str) -> None:
    pods = [p.metadata.name for p in kube_cluster.core().list_namespaced_pod("alice").items]
    assert [p for p in pods if p.startswith(prefix)] == []


@pytest.fixture
def cleanup(kube_cluster: TestCluster) -> Iterator[list[Callable[[], Any]]]:
    undo: list[Callable[[], Any]] = []
    yield undo
    for step in reversed(undo):
        try:
            step()
        except ApiException as error:
            if error.status != 404:
                raise


def test_a_user_gets_no_root_on_a_node(
    kube_cluster: TestCluster, cleanup: list[Callable[[], Any]]
) -> None:
    suffix = uuid.uuid4().hex[:6]
    alice_core, alice = kube_cluster.core("alice"), kube_cluster.custom("alice")
    admin = kube_cluster.custom()

    # A bare pod: refused at once, each violation named.
    with pytest.raises(ApiException) as caught:
        alice_core.create_namespaced_pod(
            "alice", {"metadata": {"name": f"root-{suffix}"}, "spec": ROOT_ON_THE_NODE}
        )
    assert caught.value.status == 403
    message = json.loads(caught.value.body)["message"]
    for violation in ("hostPID=true", 'hostPath volumes (volume "host")', "privileged"):
        assert violation in message, message
    assert REFUSED in message

    # The same spec as a Volcano Job's task: the object is Volcano's, its pods are refused.
    vcjob = f"root-vc-{suffix}"
    alice.create_namespaced_custom_object(
        "batch.volcano.sh",
        "v1alpha1",
        "alice",
        "jobs",
        {
            "apiVersion": "batch.volcano.sh/v1alpha1",
            "kind": "Job",
            "metadata": {"name": vcjob},
            "spec": {
                "schedulerName": "volcano",
                "queue": "default",
                "minAvailable": 1,
                "tasks": [{"name": "main", "replicas": 1, "template": {"spec": ROOT_ON_THE_NODE}}],
            },
        },
    )
    cleanup.append(
        lambda: admin.delete_namespaced_custom_object(
            "batch.volcano.sh", "v1alpha1", "alice", "jobs", vcjob
        )
    )
    # The same in a JobSet that Kueue admits: the Job it makes gets no pods either.
    js_name = f"root-js-{suffix}"
    alice.create_namespaced_custom_object(
        "jobset.x-k8s.io",
        "v1alpha2",
        "alice",
        "jobsets",
        jobset(js_name, "default", {"spec": ROOT_ON_THE_NODE}),
    )
    cleanup.append(
        lambda: admin.delete_namespaced_custom_object(
            "jobset.x-k8s.io", "v1alpha2", "alice", "jobsets", js_name
        )
    )
    assert "hostPath volumes" in _refused_pods(kube_cluster, "Job", vcjob)
    assert "hostPath volumes" in _refused_pods(kube_cluster, "Job", f"{js_name}-w-0")
    _no_pods_of(kube_cluster, vcjob)
    _no_pods_of(kube_cluster, js_name)


def _kernel() -> JobProtocol:
    request = KernelRequest(virtual_cluster="default", gpus=1)
    return kernel_job(request, name="kernel-x", key="k", image_uri="", in_process_launcher=False)


def _every_pod(options: PodOptions) -> list[tuple[str, dict[str, Any]]]:
    """(where, pod) for every pod jupyter-pai makes: each flavor's tasks of a two-role job
    and of a remote kernel, and a storage helper."""
    out: list[tuple[str, dict[str, Any]]] = []
    for flavor in sorted(FLAVORS):
        settings = HivedSettings(cpu_sku="CPU") if flavor == "hived" else None
        for job in (parse_job(GPU_JOB).job, _kernel()):
            built = FLAVORS[flavor](options, settings).build(job, make_names(job, "alice"))
            for obj in built.objects:
                for where, template in pod_templates(obj):
                    out.append((f"{flavor}: {where}", template))
    helper = HelperPods(None, options.namespace, "alice", "python:3.11-slim", options)  # type: ignore[arg-type]
    out.append(("storage helper", helper.manifest("data", "token", read_only=False)))
    return out


def _dry_run(kube_cluster: TestCluster, namespace: str, template: dict[str, Any]) -> None:
    meta = {"generateName": "dry-", "labels": template["metadata"].get("labels") or {}}
    kube_cluster.core().create_namespaced_pod(
        namespace, {"metadata": meta, "spec": template["spec"]}, dry_run="All"
    )


@pytest.fixture
def restricted_namespace(kube_cluster: TestCluster) -> Iterator[str]:
    name = f"restricted-{uuid.uuid4().hex[:6]}"
    labels = manifests.pod_security_labels("restricted")
    kube_cluster.core().create_namespace({"metadata": {"name": name, "labels": labels}})
    yield name
    kube_cluster.core().delete_namespace(name)


def test_every_pod_jupyter_pai_makes_passes_its_level(
    kube_cluster: TestCluster, restricted_namespace: str
) -> None:
    baseline = _every_pod(PodOptions(namespace="alice"))
    assert len(baseline) >= 4 * 2 + 1
    for where, template in baseline:  # alice's namespace enforces baseline
        try:
            _dry_run(kube_cluster, "alice", template)
        except ApiException as error:
            pytest.fail(f"{where} refused at baseline: {error.body}")
    # The check can fail: a baseline pod is not a restricted one.
    with pytest.raises(ApiException) as caught:
        _dry_run(kube_cluster, restricted_namespace, baseline[0][1])
    assert 'violates PodSecurity "restricted:latest"' in json.loads(caught.value.body)["message"]

    options = PodOptions(namespace=restricted_namespace, security=PodSecurity("restricted"))
    servers = [(f"user server at {level}", _server_pod(level)) for level in LEVELS]
    for where, template in [*_every_pod(options), servers[1]]:
        try:
            _dry_run(kube_cluster, restricted_namespace, template)
        except ApiException as error:
            pytest.fail(f"{where} refused at restricted: {error.body}")
    _dry_run(kube_cluster, "alice", servers[0][1])


def _server_pod(level: str) -> dict[str, Any]:
    """The user's server as KubeSpawner makes it (Docker Stacks' jovyan, uid 1000) and the
    hub's hook gives it the namespace's level."""
    from kubernetes import client
    from kubespawner.objects import make_pod

    pod = make_pod(
        name="jupyter-carol",
        cmd=["jupyterhub-singleuser"],
        port=8888,
        image="quay.io/jupyter/base-notebook",
        uid=1000,
        fs_gid=100,
    )
    spawner = SimpleNamespace(namespace="carol", user=SimpleNamespace(name="carol", groups=[]))
    settings = HubSettings(flavor="volcano", pod_security=level, config_map=None)
    pod = hooks.make_modify_pod_hook(settings)(spawner, pod)
    body = client.ApiClient().sanitize_for_serialization(pod)
    return {"metadata": {}, "spec": body["spec"]}
