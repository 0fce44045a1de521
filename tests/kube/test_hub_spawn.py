"""jupyter_pai.hub's pre-spawn hook against the real control plane: a stand-in for
KubeSpawner (the user with their groups, and an async client as the admin, as the hub
has) gets each user a namespace, service account, bindings and LocalQueues; a second
spawn changes nothing; a group left takes its VC away. And under JupyterHub, a job
annotated with the user's name outside their own namespace is not theirs."""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import AsyncIterator
from types import SimpleNamespace
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from kubernetes_asyncio import config as async_config

from jupyter_pai.backends.kubernetes import KubernetesBackend, connect
from jupyter_pai.backends.models import JobDetail, JobState
from jupyter_pai.errors import Forbidden
from jupyter_pai.hub import configure_kubespawner
from jupyter_pai.hub.hooks import NamespaceRefused
from jupyter_pai.spec import parse_job
from tests.cluster import manifests
from tests.cluster.pytest_plugin import TestCluster

pytestmark = pytest.mark.kube
QUEUES = ("kueue.x-k8s.io", "v1beta2")


def stand_in(api: Any, name: str, groups: list[str]) -> Any:
    """What the hooks read of a KubeSpawner: ``user.name``, ``user.groups`` (objects with
    ``.name``, as JupyterHub's User has) and ``api`` (its CoreV1Api)."""
    user = SimpleNamespace(name=name, groups=[SimpleNamespace(name=g) for g in groups])
    return SimpleNamespace(user=user, api=SimpleNamespace(api_client=api))


@pytest.fixture
def prefix() -> str:
    return f"hub{secrets.token_hex(2)}-"


@pytest.fixture
async def admin_api(kube_cluster: TestCluster) -> AsyncIterator[Any]:
    api = await async_config.new_client_from_config(config_file=str(kube_cluster.kubeconfig))
    yield api
    await api.close()


@pytest.fixture
def hub_ns(kube_cluster: TestCluster, prefix: str, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The hub's namespace with the admin's ConfigMap; everything made goes at the end."""
    core = kube_cluster.core()
    name = f"{prefix}hub"
    core.create_namespace({"metadata": {"name": name}})
    core.create_namespaced_config_map(
        name,
        {
            "metadata": {"name": "jupyter-pai-config"},
            "data": {"jupyter_server_config.json": '{"PAIConfig": {"backend": "kubernetes"}}'},
        },
    )
    monkeypatch.setenv("POD_NAMESPACE", name)
    yield name
    rbac = kube_cluster.api()
    for binding in client.RbacAuthorizationV1Api(rbac).list_cluster_role_binding().items:
        if binding.metadata.name.startswith(f"jupyter-pai-server-{prefix}"):
            client.RbacAuthorizationV1Api(rbac).delete_cluster_role_binding(binding.metadata.name)
    for ns in core.list_namespace().items:
        if ns.metadata.name.startswith(prefix):
            core.delete_namespace(ns.metadata.name)


def hooks(flavor: str, prefix: str) -> tuple[Any, Any]:
    c = SimpleNamespace(KubeSpawner=SimpleNamespace())
    configure_kubespawner(
        c,
        flavor=flavor,
        vc_groups={"researchers": ["research"]},
        namespace_prefix=prefix,
    )
    return c.KubeSpawner.pre_spawn_hook, c.KubeSpawner.modify_pod_hook


def allowed(kube_cluster: TestCluster, namespace: str, verb: str, resource: str, ns: str) -> bool:
    review = client.AuthorizationV1Api(kube_cluster.api()).create_subject_access_review(
        {
            "spec": {
                "user": f"system:serviceaccount:{namespace}:jupyter-pai",
                "groups": ["system:serviceaccounts", f"system:serviceaccounts:{namespace}"],
                "resourceAttributes": {
                    "namespace": ns,
                    "verb": verb,
                    "group": "jobset.x-k8s.io" if resource == "jobsets" else "",
                    "resource": resource,
                },
            }
        }
    )
    return bool(review.status.allowed)


def vc_labels(kube_cluster: TestCluster, namespace: str) -> dict[str, str]:
    labels = kube_cluster.core().read_namespace(namespace).metadata.labels or {}
    return {k: v for k, v in labels.items() if k.startswith("jupyter-pai/")}


def bindings_to_server(kube_cluster: TestCluster, namespace: str) -> list[str]:
    """The RoleBindings in ``namespace`` whose subject is a jupyter-pai server account."""
    rbac = client.RbacAuthorizationV1Api(kube_cluster.api())
    return [
        b.metadata.name
        for b in rbac.list_namespaced_role_binding(namespace).items
        if any(s.name == "jupyter-pai" for s in b.subjects or [])
    ]


def local_queues(kube_cluster: TestCluster, namespace: str) -> dict[str, str]:
    items = kube_cluster.custom().list_namespaced_custom_object(*QUEUES, namespace, "localqueues")
    return {q["metadata"]["name"]: q["spec"]["clusterQueue"] for q in items["items"]}


async def test_pre_spawn_makes_the_users_objects(
    kube_cluster: TestCluster, admin_api: Any, hub_ns: str, prefix: str
) -> None:
    pre_spawn, _ = hooks("kueue", prefix)
    carol_ns, dave_ns = f"{prefix}carol", f"{prefix}dave"
    await pre_spawn(stand_in(admin_api, "carol", ["researchers"]))
    await pre_spawn(stand_in(admin_api, "dave", []))
    rv_before = kube_cluster.core().read_namespace(carol_ns).metadata.resource_version
    await pre_spawn(stand_in(admin_api, "carol", ["researchers"]))  # again: idempotent

    core = kube_cluster.core()
    assert core.read_namespace(carol_ns).metadata.resource_version == rv_before
    assert vc_labels(kube_cluster, carol_ns) == {
        "jupyter-pai/managed": "true",
        "jupyter-pai/user": "carol",
        "jupyter-pai/vc.default": "true",
        "jupyter-pai/vc.research": "true",
    }
    assert "jupyter-pai/vc.research" not in vc_labels(kube_cluster, dave_ns)
    labels = core.read_namespace(carol_ns).metadata.labels
    assert labels["pod-security.kubernetes.io/enforce"] == "baseline"
    assert core.read_namespaced_service_account("jupyter-pai", carol_ns)
    config = core.read_namespaced_config_map("jupyter-pai-config", carol_ns)
    assert config.data == {"jupyter_server_config.json": '{"PAIConfig": {"backend": "kubernetes"}}'}
    assert local_queues(kube_cluster, carol_ns) == {"default": "default", "research": "research"}
    assert local_queues(kube_cluster, dave_ns) == {"default": "default"}

    # The namespace is the isolation: carol's account works in hers, not in dave's.
    assert allowed(kube_cluster, carol_ns, "create", "jobsets", carol_ns)
    assert allowed(kube_cluster, carol_ns, "create", "pods", carol_ns)
    assert not allowed(kube_cluster, carol_ns, "list", "pods", dave_ns)
    assert not allowed(kube_cluster, carol_ns, "create", "jobsets", dave_ns)
    assert allowed(kube_cluster, carol_ns, "list", "nodes", "")  # the cluster reader


async def test_a_group_left_takes_its_vc_away(
    kube_cluster: TestCluster, admin_api: Any, hub_ns: str, prefix: str
) -> None:
    pre_spawn, _ = hooks("kueue", prefix)
    carol_ns = f"{prefix}carol"
    await pre_spawn(stand_in(admin_api, "carol", ["researchers"]))
    # An admin's own LocalQueue and label are not the hook's to remove.
    kube_cluster.custom().create_namespaced_custom_object(
        *QUEUES,
        carol_ns,
        "localqueues",
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "LocalQueue",
            "metadata": {"name": "manual"},
            "spec": {"clusterQueue": "default"},
        },
    )
    kube_cluster.core().patch_namespace(carol_ns, {"metadata": {"labels": {"team": "a"}}})

    await pre_spawn(stand_in(admin_api, "carol", []))
    labels = kube_cluster.core().read_namespace(carol_ns).metadata.labels
    assert "jupyter-pai/vc.research" not in labels
    assert labels["jupyter-pai/vc.default"] == "true" and labels["team"] == "a"
    assert local_queues(kube_cluster, carol_ns) == {"default": "default", "manual": "default"}

    await pre_spawn(stand_in(admin_api, "carol", ["researchers"]))
    assert local_queues(kube_cluster, carol_ns)["research"] == "research"


async def test_other_flavors_get_no_local_queues(
    kube_cluster: TestCluster, admin_api: Any, hub_ns: str, prefix: str
) -> None:
    pre_spawn, _ = hooks("volcano", prefix)
    await pre_spawn(stand_in(admin_api, "dave", ["researchers"]))
    dave_ns = f"{prefix}dave"
    assert vc_labels(kube_cluster, dave_ns)["jupyter-pai/vc.research"] == "true"
    assert local_queues(kube_cluster, dave_ns) == {}
    rb = client.RbacAuthorizationV1Api(kube_cluster.api()).read_namespaced_role_binding(
        "jupyter-pai-server", dave_ns
    )
    assert rb.role_ref.name == "jupyter-pai-user"
    assert [(s.kind, s.name, s.namespace) for s in rb.subjects] == [
        ("ServiceAccount", "jupyter-pai", dave_ns)
    ]


async def test_bindings_the_hub_did_not_make_are_left_alone(
    kube_cluster: TestCluster, admin_api: Any, hub_ns: str, prefix: str
) -> None:
    """An admin's binding of a person in the namespace stays as it is; one that takes the
    name of the server's binding stops the spawn with the reason, and is not replaced."""
    erin_ns = f"{prefix}erin"
    pre_spawn, _ = hooks("volcano", prefix)
    await pre_spawn(stand_in(admin_api, "erin", []))  # the hub makes erin's namespace
    rbac = client.RbacAuthorizationV1Api(kube_cluster.api())

    def binding(name: str) -> dict[str, Any]:
        return {
            "metadata": {"name": name, "namespace": erin_ns},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": "jupyter-pai-user",
            },
            "subjects": [{"kind": "User", "name": "erin", "apiGroup": "rbac.authorization.k8s.io"}],
        }

    rbac.create_namespaced_role_binding(erin_ns, binding("jupyter-pai-user"))
    await pre_spawn(stand_in(admin_api, "erin", []))
    kept = rbac.read_namespaced_role_binding("jupyter-pai-user", erin_ns)
    assert [(s.kind, s.name) for s in kept.subjects] == [("User", "erin")]

    rbac.delete_namespaced_role_binding("jupyter-pai-server", erin_ns)
    rbac.create_namespaced_role_binding(erin_ns, binding("jupyter-pai-server"))
    with pytest.raises(ValueError, match="RoleBinding jupyter-pai-server exists but was not made"):
        await pre_spawn(stand_in(admin_api, "erin", []))
    squatter = rbac.read_namespaced_role_binding("jupyter-pai-server", erin_ns)
    assert [(s.kind, s.name) for s in squatter.subjects] == [("User", "erin")]


async def test_a_missing_config_map_is_named(
    kube_cluster: TestCluster, admin_api: Any, hub_ns: str, prefix: str
) -> None:
    kube_cluster.core().delete_namespaced_config_map("jupyter-pai-config", hub_ns)
    pre_spawn, _ = hooks("native", prefix)
    with pytest.raises(
        RuntimeError,
        match=f"ConfigMap 'jupyter-pai-config' not found in the hub's namespace '{hub_ns}'",
    ):
        await pre_spawn(stand_in(admin_api, "carol", []))
    with pytest.raises(ApiException):
        kube_cluster.core().read_namespaced_config_map("jupyter-pai-config", f"{prefix}carol")


SLEEPER = """
protocolVersion: 2
name: {name}
type: job
taskRoles:
  worker:
    instances: 1
    resourcePerInstance: {{cpu: 1, memoryMB: 256, gpu: 0, ports: {{http: 1}}}}
    commands: ['sleep 300']
"""


async def test_a_forged_owner_outside_the_users_namespace_is_not_theirs(
    kube_cluster: TestCluster, prefix: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    """A namespace others may write (a team's) holds a job annotated with carol's name,
    made by someone else: carol's server under JupyterHub, whose pod runs in her own
    namespace, does not stop, delete or open the ports of it; in her namespace it does."""
    core = kube_cluster.core()
    team, own = f"{prefix}team", f"{prefix}carol"
    for ns in (team, own):
        core.create_namespace({"metadata": {"name": ns}})
    monkeypatch.delenv("JUPYTERHUB_USER", raising=False)
    monkeypatch.delenv("JUPYTER_PAI_USER", raising=False)

    def backend(namespace: str) -> KubernetesBackend:
        return KubernetesBackend(
            kubeconfig=str(kube_cluster.kubeconfig),
            namespace=namespace,
            flavor="native",
            user="carol",
            node_selector={manifests.POOL_LABEL: "gpu"},  # simulated: Running at once
        )

    try:
        forger = backend(team)  # someone else, claiming carol's name
        await forger.start()
        try:
            forged = await forger.submit(parse_job(SLEEPER.format(name="forged")).job)
        finally:
            await forger.close()
        mine_maker = backend(own)
        await mine_maker.start()
        try:
            mine = await mine_maker.submit(parse_job(SLEEPER.format(name="mine")).job)
        finally:
            await mine_maker.close()

        pod_ns = tmp_path / "namespace"
        pod_ns.write_text(own)
        monkeypatch.setattr(connect, "SA_NAMESPACE", pod_ns)
        monkeypatch.setenv("JUPYTERHUB_USER", "carol")
        carol = backend(team)
        await carol.start()
        try:
            job = await carol.get_job(forged.id)
            assert job.user == "carol"  # what the annotation says, shown as it is
            with pytest.raises(Forbidden, match=f"namespace {team} is not yours"):
                await carol.stop_job(forged.id)
            with pytest.raises(Forbidden, match=f"namespace {team} is not yours"):
                await carol.delete_job(forged.id)
            port = (await wait_running(carol, forged.id)).tasks[0].ports["http"][0]
            with pytest.raises(Forbidden, match=f"namespace {team} is not yours"):
                await carol.task_port(forged.id, "worker-0", str(port))
        finally:
            await carol.close()
        carol = backend(own)
        await carol.start()
        try:
            stopped = await carol.stop_job(mine.id)
            assert stopped.id == mine.id
        finally:
            await carol.close()
    finally:
        for ns in (team, own):
            core.delete_namespace(ns)


async def wait_running(b: KubernetesBackend, job_id: str, timeout: float = 60) -> JobDetail:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job = await b.get_job(job_id)
        if job.state == JobState.RUNNING:
            return job
        await asyncio.sleep(0.25)
    raise AssertionError(f"job {job_id} not running after {timeout}s")


def _self_review(api: Any, attributes: dict[str, str]) -> bool:
    body = {"spec": {"resourceAttributes": attributes}}
    review = client.AuthorizationV1Api(api).create_self_subject_access_review(body)
    return bool(review.status.allowed)


async def test_the_users_account_is_refused_what_it_must_not_do(
    kube_cluster: TestCluster, admin_api: Any, hub_ns: str, prefix: str
) -> None:
    """Asked as the server's own account (a token of its service account, as the pod has):
    what a user's server may not do anywhere, with what it must do as the control."""
    pre_spawn, _ = hooks("volcano", prefix)
    await pre_spawn(stand_in(admin_api, "carol", ["researchers"]))
    await pre_spawn(stand_in(admin_api, "dave", []))
    carol_ns, dave_ns = f"{prefix}carol", f"{prefix}dave"
    token = (
        kube_cluster.core()
        .create_namespaced_service_account_token(
            "jupyter-pai", carol_ns, {"spec": {"expirationSeconds": 600}}
        )
        .status.token
    )
    admin = kube_cluster.api().configuration
    as_account = client.Configuration(host=admin.host)
    as_account.ssl_ca_cert = admin.ssl_ca_cert
    as_account.api_key = {"BearerToken": token}
    as_account.api_key_prefix = {"BearerToken": "Bearer"}
    api = client.ApiClient(as_account)
    review = client.AuthenticationV1Api(api).create_self_subject_review({})
    assert review.status.user_info.username == f"system:serviceaccount:{carol_ns}:jupyter-pai"
    for attributes in (
        {"namespace": carol_ns, "verb": "create", "group": "batch.volcano.sh", "resource": "jobs"},
        {"namespace": carol_ns, "verb": "get", "resource": "pods", "subresource": "log"},
    ):
        assert _self_review(api, attributes), attributes  # the control: the check can fail
    refused = [
        {"namespace": dave_ns, "verb": "create", "resource": "pods"},
        {"namespace": dave_ns, "verb": "list", "resource": "secrets"},
        {"verb": "list", "resource": "secrets"},  # cluster-wide
        {"verb": "list", "resource": "pods"},  # cluster-wide
        {"namespace": carol_ns, "verb": "create", "resource": "pods", "subresource": "exec"},
        {"namespace": carol_ns, "verb": "update", "resource": "secrets"},
        {
            "namespace": carol_ns,
            "verb": "escalate",
            "group": "rbac.authorization.k8s.io",
            "resource": "roles",
        },
        {
            "namespace": carol_ns,
            "verb": "bind",
            "group": "rbac.authorization.k8s.io",
            "resource": "clusterroles",
        },
        {
            "namespace": carol_ns,
            "verb": "create",
            "group": "rbac.authorization.k8s.io",
            "resource": "rolebindings",
        },
        {"verb": "patch", "resource": "namespaces", "name": carol_ns},
    ]
    allowed_now = [a for a in refused if _self_review(api, a)]
    assert allowed_now == [], allowed_now


async def test_the_hub_takes_over_no_namespace(
    kube_cluster: TestCluster, admin_api: Any, hub_ns: str, prefix: str
) -> None:
    """A login named as a system namespace or the hub's own, a namespace an admin made and
    one the hub made for someone else: each spawn stops with the reason, and nothing is
    labelled or bound there (whether or not the chart's admission policy is installed:
    here it is not, and the hub holds the admin's rights)."""
    core = kube_cluster.core()
    no_prefix, _ = hooks("volcano", "")
    for login in ("kube-system", "default", "kube-anything", hub_ns):
        with pytest.raises(NamespaceRefused, match="cannot have namespace"):
            await no_prefix(stand_in(admin_api, login, []))
        if login != "kube-anything":
            assert bindings_to_server(kube_cluster, login) == [], login
    with pytest.raises(ApiException):
        core.read_namespace("kube-anything")  # never made

    pre_spawn, _ = hooks("volcano", prefix)
    made_by_admin = f"{prefix}frank"
    core.create_namespace({"metadata": {"name": made_by_admin, "labels": {"team": "ops"}}})
    with pytest.raises(NamespaceRefused, match="exists and was not made by jupyter-pai's hub"):
        await pre_spawn(stand_in(admin_api, "frank", []))
    assert core.read_namespace(made_by_admin).metadata.labels == {
        "team": "ops",
        "kubernetes.io/metadata.name": made_by_admin,
    }
    assert bindings_to_server(kube_cluster, made_by_admin) == []

    # A namespace the hub made for gina is not harry's, even if a template maps both there.
    await pre_spawn(stand_in(admin_api, "gina", []))
    gina_ns = f"{prefix}gina"
    harry = stand_in(admin_api, "harry", [])
    harry.namespace = gina_ns  # KubeSpawner's user_namespace_template, say
    with pytest.raises(NamespaceRefused, match="not made by jupyter-pai's hub for user 'harry'"):
        await pre_spawn(harry)
    annotations = core.read_namespace(gina_ns).metadata.annotations
    assert annotations["jupyter-pai/user"] == "gina"


async def test_each_users_namespace_admits_only_its_own_pods(
    kube_cluster: TestCluster, admin_api: Any, hub_ns: str, prefix: str
) -> None:
    """The hub gives each user namespace a NetworkPolicy: ingress from its own pods and the
    hub's namespace (its proxy) only, put back when it drifts. (Enforced by the network
    plugin of a cluster with real nodes; here the API server holds it as written.)"""
    pre_spawn, _ = hooks("volcano", prefix)
    await pre_spawn(stand_in(admin_api, "carol", []))
    carol_ns = f"{prefix}carol"
    networking = client.NetworkingV1Api(kube_cluster.api())
    policy = networking.read_namespaced_network_policy("jupyter-pai-ingress", carol_ns)
    assert policy.spec.pod_selector.match_labels is None  # every pod of the namespace
    assert policy.spec.policy_types == ["Ingress"]
    [rule] = policy.spec.ingress
    peers = [kube_cluster.api().sanitize_for_serialization(p) for p in rule._from]
    assert peers == [
        {"podSelector": {}},
        {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": hub_ns}}},
    ]
    assert rule.ports is None
    rv = policy.metadata.resource_version
    await pre_spawn(stand_in(admin_api, "carol", []))  # again: unchanged
    assert (
        networking.read_namespaced_network_policy(
            "jupyter-pai-ingress", carol_ns
        ).metadata.resource_version
        == rv
    )
    # Opened to everyone by hand: the next spawn closes it again.
    networking.patch_namespaced_network_policy(
        "jupyter-pai-ingress", carol_ns, {"spec": {"ingress": [{}]}}
    )
    await pre_spawn(stand_in(admin_api, "carol", []))
    [rule] = networking.read_namespaced_network_policy("jupyter-pai-ingress", carol_ns).spec.ingress
    assert len(rule._from) == 2
