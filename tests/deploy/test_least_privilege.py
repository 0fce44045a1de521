"""The backend works with the chart's roles and nothing more: a service account bound only
to the rendered jupyter-pai-user (in its namespace) and jupyter-pai-cluster-reader runs a
job's whole life on each flavor — watches sync, submission with a Secret, logs with the
secret blanked, a port-forward to the task, a storage browsed through its helper pod, virtual clusters and nodes, stop, delete — and the backend logs no refusal
(its background sweeps only log theirs). The namespace enforces Pod Security ``restricted``
(the stricter level a hub may give), so every pod of that life meets it on every flavor."""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from jupyter_pai.backends.base import LogQuery
from jupyter_pai.backends.kubernetes import KubernetesBackend, permissions
from jupyter_pai.backends.models import JobDetail, JobState, TaskState
from jupyter_pai.spec import parse_job
from tests.cluster import hived as cluster_hived
from tests.cluster import kube, manifests
from tests.cluster.pytest_plugin import TestCluster

from .chart import Manifest, flavor_values, named, objects, template

pytestmark = pytest.mark.kube

SPEC = """
protocolVersion: 2
name: least-privilege
type: job
secrets: {token: lp-s3cr3t-value}
taskRoles:
  main:
    instances: 1
    resourcePerInstance: {cpu: 1, memoryMB: 128, gpu: 0, ports: {http: 1}}
    commands:
      - echo "token=<% $secrets.token %>"
      - echo ready
      - python3 -m http.server "$PAI_CURRENT_CONTAINER_PORT"
"""


def _rbac(role: str, kind: str, name: str, namespace: str | None, sa: str, ns: str) -> Manifest:
    meta: dict[str, Any] = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": kind,
        "metadata": meta,
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": [{"kind": "ServiceAccount", "name": sa, "namespace": ns}],
    }


@pytest.fixture
def restricted(
    kube_cluster: TestCluster, flavor: str, tmp_path: Path
) -> Iterator[tuple[str, Path]]:
    """A namespace and the kubeconfig of a service account in it that holds the chart's
    roles for ``flavor`` only (renamed, so as not to replace the test cluster's)."""
    suffix = uuid.uuid4().hex[:6]
    ns, user_role, reader_role = f"lp-{flavor}-{suffix}", f"lp-user-{suffix}", f"lp-reader-{suffix}"
    docs = objects(template(flavor_values(flavor)))
    roles = []
    for chart_name, name in (
        ("jupyter-pai-user", user_role),
        ("jupyter-pai-cluster-reader", reader_role),
    ):
        role = named(docs, "ClusterRole", chart_name)
        role["metadata"] = {"name": name}
        roles.append(role)
    api = kube_cluster.api()
    core = kube.core(api)
    cluster_binding = _rbac(reader_role, "ClusterRoleBinding", reader_role, None, "jupyter", ns)
    objects_made: list[Manifest] = [
        manifests.namespace(ns, manifests.pod_security_labels("restricted")),
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": "jupyter", "namespace": ns},
        },
        *roles,
        _rbac(user_role, "RoleBinding", "jupyter-pai-user", ns, "jupyter", ns),
        cluster_binding,
    ]
    if flavor == "kueue":  # the hub's part at spawn: the VC's LocalQueue
        objects_made.append(
            {
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "LocalQueue",
                "metadata": {"name": "default", "namespace": ns},
                "spec": {"clusterQueue": "default"},
            }
        )
    kube.apply(api, objects_made)
    try:
        token = core.create_namespaced_service_account_token(
            "jupyter", ns, {"spec": {"expirationSeconds": 3600}}
        ).status.token
        config = api.configuration
        path = tmp_path / "jupyter.kubeconfig"
        kube.write_kubeconfig(path, config.host, Path(config.ssl_ca_cert), "jupyter", token, ns)
        yield ns, path
    finally:
        rbac = client.RbacAuthorizationV1Api(api)
        for delete, name in (
            (rbac.delete_cluster_role_binding, reader_role),
            (rbac.delete_cluster_role, reader_role),
            (rbac.delete_cluster_role, user_role),
            (core.delete_namespace, ns),
        ):
            try:
                delete(name)
            except ApiException as error:
                if error.status != 404:
                    raise


@pytest.fixture(params=permissions.FLAVORS)
def flavor(request: pytest.FixtureRequest) -> str:
    return str(request.param)


async def _wait(backend: KubernetesBackend, job_id: str, check: Any, timeout: float) -> JobDetail:
    deadline = time.monotonic() + timeout
    while True:
        detail = await backend.get_job(job_id)
        if check(detail):
            return detail
        tasks = [(t.role, t.index, t.state.value, t.exit_code, t.exit_reason) for t in detail.tasks]
        assert time.monotonic() < deadline, (
            f"{job_id} is {detail.state} ({detail.waiting_reason or detail.sub_state}): {tasks}"
        )
        await asyncio.sleep(0.3)


async def _forwarded_get(backend: KubernetesBackend, job: JobDetail) -> bytes:
    """The status line of an HTTP GET through a port-forward to the task's port."""
    port = job.tasks[0].ports["http"][0]
    forward = await backend.forward_ports(job, [port])
    try:
        deadline = time.monotonic() + 30
        while True:
            reader, writer = await asyncio.open_unix_connection(forward.socket(port))
            writer.write(b"GET / HTTP/1.0\r\n\r\n")
            await writer.drain()
            answer = await reader.read(12)
            writer.close()
            if answer or time.monotonic() > deadline:
                return answer
            await asyncio.sleep(0.5)  # the server is not listening yet
    finally:
        await forward.close()


@pytest.fixture
def claim(kube_cluster: TestCluster, restricted: tuple[str, Path], tmp_path: Path) -> Iterator[str]:
    """A claim in the namespace, bound to a hostPath volume holding ``hello.txt`` (made as
    the admin: volumes are cluster-wide)."""
    ns = restricted[0]
    root = tmp_path / "volume"
    root.mkdir()
    (root / "hello.txt").write_text("hello")
    core = kube_cluster.core()
    name = f"{ns}-data"
    core.create_persistent_volume(
        {
            "metadata": {"name": name},
            "spec": {
                "capacity": {"storage": "1Gi"},
                "accessModes": ["ReadWriteOnce"],
                "storageClassName": "",
                "persistentVolumeReclaimPolicy": "Retain",
                "hostPath": {"path": str(root), "type": "Directory"},
                "claimRef": {"namespace": ns, "name": "data"},
            },
        }
    )
    try:
        core.create_namespaced_persistent_volume_claim(
            ns,
            {
                "metadata": {"name": "data"},
                "spec": {
                    "accessModes": ["ReadWriteOnce"],
                    "storageClassName": "",
                    "volumeName": name,
                    "resources": {"requests": {"storage": "1Gi"}},
                },
            },
        )
        yield "data"
    finally:
        core.delete_persistent_volume(name)


async def test_backend_needs_nothing_beyond_the_chart(
    kube_cluster: TestCluster,
    flavor: str,
    restricted: tuple[str, Path],
    claim: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    ns, kubeconfig = restricted
    log = logging.getLogger(f"jupyter-pai-lp-{flavor}")
    settings: dict[str, Any] = {}
    if flavor == "hived":
        settings = {"hived_url": kube_cluster.hived_url, "hived_cpu_sku": cluster_hived.CPU_SKU}
    backend = KubernetesBackend(
        kubeconfig=str(kubeconfig),
        namespace=ns,
        flavor=flavor,
        user="lp",
        node_selector={manifests.RUNNER_LABEL: "true"},
        leftover_grace_seconds=0,
        pod_security="restricted",
        log=log,
        **settings,
    )
    with caplog.at_level(logging.WARNING, logger=log.name):
        await backend.start()
        try:
            assert await backend.cache.wait_synced(30), "a watch did not sync"
            assert any(vc.name == "default" for vc in await backend.virtual_clusters())
            assert await backend.nodes()
            # A storage, browsed through a helper pod (create, get, its log, a port-forward).
            deadline = time.monotonic() + 30
            while not any(st.name == claim for st in await backend.storages()):
                assert time.monotonic() < deadline, "the claim never appears as a storage"
                await asyncio.sleep(0.3)
            listing: Any = await backend.read_storage(claim, "")
            assert [e.name for e in listing.entries] == ["hello.txt"]
            job = await backend.submit(parse_job(SPEC).job)
            running = await _wait(
                backend,
                job.id,
                lambda d: any(t.state == TaskState.RUNNING for t in d.tasks),
                90,
            )
            assert running.state == JobState.RUNNING
            deadline = time.monotonic() + 30
            while True:
                stream = await backend.logs(job.id, LogQuery(role="main", index=0))
                text = b"".join([c async for c in stream.chunks]).decode()
                if "ready" in text:
                    break
                assert time.monotonic() < deadline, text
                await asyncio.sleep(0.5)
            assert "lp-s3cr3t-value" not in text and "token=" in text
            assert await _forwarded_get(backend, running) == b"HTTP/1.0 200"
            await backend.stop_job(job.id)
            stopped = await _wait(backend, job.id, lambda d: d.state.terminal, 60)
            assert stopped.state == JobState.STOPPED
            await backend.delete_job(job.id)
            deadline = time.monotonic() + 30
            while any(j.id == job.id for j in await backend.list_jobs()):
                assert time.monotonic() < deadline, "the deleted job is still listed"
                await asyncio.sleep(0.3)
        finally:
            await backend.close()
    refusals = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert not refusals, refusals
