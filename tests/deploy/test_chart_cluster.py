"""The chart's objects against the real control plane: kube-apiserver accepts every
flavor's (server-side dry run: the CEL of the admission policies compiles, the CRDs'
schemas take the VCs), and the policies refuse what they should: a Volcano Job in a queue
its namespace is not labelled for, the hub writing outside the namespaces it manages."""

from __future__ import annotations

import copy
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kubernetes import client, dynamic
from kubernetes.client.exceptions import ApiException

from jupyter_pai.backends.kubernetes import permissions
from jupyter_pai.backends.kubernetes.flavors.volcano_queues import queue_manifest
from tests.cluster.pytest_plugin import TestCluster

from .chart import Manifest, flavor_values, objects, template

pytestmark = pytest.mark.kube

POLICY_WAIT = 30.0


_DynamicClient: Any = dynamic.DynamicClient


def _resource(api: Any, manifest: Manifest) -> Any:
    return _DynamicClient(api).resources.get(
        api_version=manifest["apiVersion"], kind=manifest["kind"]
    )


def _apply(api: Any, manifest: Manifest, *, dry_run: bool) -> Any:
    return _resource(api, manifest).server_side_apply(
        body=manifest,
        name=manifest["metadata"]["name"],
        namespace=manifest["metadata"].get("namespace"),
        field_manager="jupyter-pai-chart-test",
        force_conflicts=True,
        dry_run="All" if dry_run else None,
    )


def _delete(api: Any, manifest: Manifest) -> None:
    try:
        _resource(api, manifest).delete(
            name=manifest["metadata"]["name"], namespace=manifest["metadata"].get("namespace")
        )
    except ApiException as error:
        if error.status != 404:
            raise


@pytest.mark.parametrize("flavor", permissions.FLAVORS)
def test_api_server_accepts_every_object(kube_cluster: TestCluster, flavor: str) -> None:
    api = kube_cluster.api()
    values = flavor_values(flavor)
    # Namespaced objects go to namespaces the test cluster has.
    values["hub"] = {"serviceAccount": {"name": "hub", "namespace": "default"}}
    docs = objects(template(values))
    assert len(docs) >= 8
    for doc in docs:
        out = _apply(api, doc, dry_run=True)
        assert out.metadata.name == doc["metadata"]["name"]


@pytest.fixture
def applied(kube_cluster: TestCluster) -> Iterator[Callable[[list[Manifest]], None]]:
    """Apply objects for real; deleted again after the test, whatever happens."""
    api = kube_cluster.api()
    done: list[Manifest] = []

    def apply(docs: list[Manifest]) -> None:
        for doc in docs:
            _apply(api, doc, dry_run=False)
            done.append(doc)

    yield apply
    for doc in reversed(done):
        _delete(api, doc)


def _named(docs: list[Manifest], *names: str) -> list[Manifest]:
    return [d for d in docs if d["metadata"]["name"] in names]


def _refused(create: Callable[[], Any]) -> ApiException:
    with pytest.raises(ApiException) as caught:
        create()
    return caught.value


def _until_refused(
    create: Callable[[], Any], undo: Callable[[Any], None], by: str = ""
) -> ApiException:
    """A new policy takes a moment to reach the API server's admission, and a new binding
    its authorizer: retry (undoing what got through, and past refusals that do not say
    ``by``: the caller's rights not yet in force) until the policy refuses."""
    deadline = time.monotonic() + POLICY_WAIT
    while True:
        try:
            made = create()
        except ApiException as error:
            if by in str(error.body) or time.monotonic() >= deadline:
                return error
        else:
            undo(made)
        assert time.monotonic() < deadline, "the admission policy never took effect"
        time.sleep(0.5)


def _vcjob(name: str, queue: str) -> Manifest:
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {
            "schedulerName": "volcano",
            "queue": queue,
            "minAvailable": 1,
            "tasks": [
                {
                    "name": "main",
                    "replicas": 1,
                    "template": {
                        "spec": {
                            "restartPolicy": "Never",
                            # No node has this: the job's pod stays pending, runs nothing.
                            "nodeSelector": {"jupyter-pai.test/pool": "nowhere"},
                            "containers": [{"name": "main", "image": "busybox"}],
                        }
                    },
                }
            ],
        },
    }


QUEUES = ("scheduling.volcano.sh", "v1beta1", "queues")


def _label(core: Any, namespace: str, value: str | None, vc: str = "research") -> None:
    core.patch_namespace(namespace, {"metadata": {"labels": {f"jupyter-pai/vc.{vc}": value}}})


def test_volcano_queue_policy(
    kube_cluster: TestCluster, applied: Callable[[list[Manifest]], None]
) -> None:
    # research split by GPU type: its type queues count as research.
    values = copy.deepcopy(flavor_values("volcano"))  # shared with the other tests
    values["gpuTypes"] = {"H100-80GB": {"product": "NVIDIA-H100-80GB-HBM3"}}
    values["virtualClusters"]["typed"] = {"gpuTypes": {"H100-80GB": 2}}
    docs = objects(template(values))
    policy = _named(docs, "jupyter-pai-volcano-queues")
    assert [d["kind"] for d in policy] == [
        "ValidatingAdmissionPolicy",
        "ValidatingAdmissionPolicyBinding",
    ]
    admin, bob = kube_cluster.custom(), kube_cluster.custom("bob")
    core = kube_cluster.core()
    suffix = uuid.uuid4().hex[:6]

    def create(queue: str) -> Callable[[], Any]:
        def make() -> Any:
            return bob.create_namespaced_custom_object(
                "batch.volcano.sh", "v1alpha1", "bob", "jobs", _vcjob(f"vc-{queue}-{suffix}", queue)
            )

        return make

    def undo(made: Any) -> None:
        admin.delete_namespaced_custom_object(
            "batch.volcano.sh", "v1alpha1", "bob", "jobs", made["metadata"]["name"]
        )

    typed_queue = queue_manifest("typed", 2, gpu_type="H100-80GB")
    admin.create_cluster_custom_object(*QUEUES, typed_queue)
    applied(policy)
    try:
        error = _until_refused(create("research"), undo, by="may not use virtual cluster")
        assert error.status == 403, error.body
        assert "may not use virtual cluster research" in str(error.body)
        error = _refused(create("typed-h100-80gb"))
        assert error.status == 403 and "may not use virtual cluster typed " in str(error.body)
        # The open VC stays open to every namespace.
        undo(create("default")())
        # A bare pod Volcano schedules names its queue in an annotation: held alike.
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": f"bare-{suffix}",
                "annotations": {"scheduling.volcano.sh/queue-name": "research"},
            },
            "spec": {
                "schedulerName": "volcano",
                "nodeSelector": {"jupyter-pai.test/pool": "nowhere"},
                "containers": [{"name": "main", "image": "busybox"}],
            },
        }
        error = _refused(lambda: kube_cluster.core("bob").create_namespaced_pod("bob", pod))
        assert error.status == 403 and "virtual cluster research" in str(error.body)
        # Once the admin labels bob's namespace for research, bob may use it.
        _label(core, "bob", "true")
        deadline = time.monotonic() + POLICY_WAIT
        while True:
            try:
                undo(create("research")())
                break
            except ApiException:
                assert time.monotonic() < deadline, "the namespace's label was never seen"
                time.sleep(0.5)
        # A type queue is its VC's: the VC's label allows it.
        _label(core, "bob", "true", vc="typed")
        deadline = time.monotonic() + POLICY_WAIT
        while True:
            try:
                undo(create("typed-h100-80gb")())
                break
            except ApiException:
                assert time.monotonic() < deadline, "the namespace's label was never seen"
                time.sleep(0.5)
    finally:
        _label(core, "bob", None)
        _label(core, "bob", None, vc="typed")
        admin.delete_cluster_custom_object(*QUEUES, typed_queue["metadata"]["name"])


def _hub_client(kube_cluster: TestCluster, namespace: str, name: str) -> Any:
    core = kube_cluster.core()
    core.create_namespace({"metadata": {"name": namespace}})
    core.create_namespaced_service_account(namespace, {"metadata": {"name": name}})
    token = core.create_namespaced_service_account_token(
        name, namespace, {"spec": {"expirationSeconds": 3600}}
    ).status.token
    admin = kube_cluster.api().configuration
    config = client.Configuration()
    config.host, config.ssl_ca_cert = admin.host, admin.ssl_ca_cert
    config.api_key = {"authorization": f"Bearer {token}"}
    return client.ApiClient(config)


def test_hub_writes_only_in_managed_namespaces(
    kube_cluster: TestCluster, applied: Callable[[list[Manifest]], None]
) -> None:
    suffix = uuid.uuid4().hex[:6]
    hub_ns, managed, unmanaged = f"hub-{suffix}", f"managed-{suffix}", f"unmanaged-{suffix}"
    values = flavor_values("kueue")
    values["hub"] = {"serviceAccount": {"name": "hub", "namespace": hub_ns}}
    docs = objects(template(values))
    # The user role stays the test cluster's (same name); the hub's and its policy are
    # the chart's.
    core = kube_cluster.core()
    try:
        hub_api = _hub_client(kube_cluster, hub_ns, "hub")
        applied(_named(docs, "jupyter-pai-hub"))
        core.create_namespace({"metadata": {"name": unmanaged}})
        hub: Any = client.CoreV1Api(hub_api)
        rbac: Any = client.RbacAuthorizationV1Api(hub_api)
        sa = {"metadata": {"name": "jupyter"}}

        def bind(namespace: str, role: str) -> Any:
            return rbac.create_namespaced_role_binding(
                namespace,
                {
                    "metadata": {"name": f"jupyter-{role}"},
                    "roleRef": {
                        "apiGroup": "rbac.authorization.k8s.io",
                        "kind": "ClusterRole",
                        "name": role,
                    },
                    "subjects": [
                        {"kind": "ServiceAccount", "name": "jupyter", "namespace": namespace}
                    ],
                },
            )

        # An unlabelled namespace: refused (once the policy is in force).
        error = _until_refused(
            # A new name each try: a namespace made before the policy was in force is
            # still terminating when the next try comes (409).
            lambda: hub.create_namespace({"metadata": {"name": f"nolabel-{uuid.uuid4().hex[:8]}"}}),
            lambda made: core.delete_namespace(made.metadata.name),
            by="jupyter-pai/managed=true",
        )
        assert error.status == 403 and "jupyter-pai/managed=true" in str(error.body)
        labels = {"jupyter-pai/managed": "true"}
        # A user namespace enforces Pod Security at the chart's level, never below.
        for level in (None, "privileged"):
            pss = {"pod-security.kubernetes.io/enforce": level} if level else {}
            error = _refused(
                lambda pss=pss: hub.create_namespace(
                    {"metadata": {"name": managed, "labels": {**labels, **pss}}}
                )
            )
            assert error.status == 403 and "enforces Pod Security level baseline" in str(error.body)
        labels["pod-security.kubernetes.io/enforce"] = "baseline"
        hub.create_namespace({"metadata": {"name": managed, "labels": labels}})
        error = _refused(
            lambda: hub.patch_namespace(
                managed,
                {"metadata": {"labels": {"pod-security.kubernetes.io/enforce": "privileged"}}},
            )
        )
        assert error.status == 403 and "enforces Pod Security level baseline" in str(error.body)
        hub.create_namespaced_service_account(managed, sa)
        bind(managed, "jupyter-pai-user")
        queue = {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "LocalQueue",
            "metadata": {"name": "default"},
            "spec": {"clusterQueue": "default"},
        }
        client.CustomObjectsApi(hub_api).create_namespaced_custom_object(
            "kueue.x-k8s.io", "v1beta2", managed, "localqueues", queue
        )
        hub.create_namespaced_config_map(
            managed, {"metadata": {"name": "jupyter-pai-config"}, "data": {"a.json": "{}"}}
        )
        netpol = {"metadata": {"name": "jupyter-pai-ingress"}, "spec": {"podSelector": {}}}
        networking: Any = client.NetworkingV1Api(hub_api)
        networking.create_namespaced_network_policy(managed, netpol)
        networking.replace_namespaced_network_policy(
            "jupyter-pai-ingress",
            managed,
            {
                **netpol,
                "metadata": networking.read_namespaced_network_policy(
                    "jupyter-pai-ingress", managed
                ).metadata,
            },
        )
        # Its namespaces' VC labels follow the user's groups.
        hub.patch_namespace(managed, {"metadata": {"labels": {"jupyter-pai/vc.research": "true"}}})

        def cluster_bind(role: str, labels: dict[str, str]) -> Any:
            return rbac.create_cluster_role_binding(
                {
                    "metadata": {"name": f"{role}-{managed}", "labels": labels},
                    "roleRef": {
                        "apiGroup": "rbac.authorization.k8s.io",
                        "kind": "ClusterRole",
                        "name": role,
                    },
                    "subjects": [
                        {"kind": "ServiceAccount", "name": "jupyter", "namespace": managed}
                    ],
                }
            )

        cluster_bind("jupyter-pai-cluster-reader", labels)
        rbac.delete_cluster_role_binding(f"jupyter-pai-cluster-reader-{managed}")
        # Admission: a ClusterRoleBinding it did not label as its own.
        error = _refused(lambda: cluster_bind("jupyter-pai-cluster-reader", {}))
        assert error.status == 403 and "jupyter-pai/managed=true" in str(error.body)
        # RBAC: it may bind its two roles only, never one it does not hold.
        assert _refused(lambda: bind(managed, "cluster-admin")).status == 403
        assert _refused(lambda: cluster_bind("cluster-admin", labels)).status == 403
        # It cannot take over a namespace by labelling it.
        error = _refused(lambda: hub.patch_namespace(unmanaged, {"metadata": {"labels": labels}}))
        assert error.status == 403 and "jupyter-pai/managed=true" in str(error.body)
        # Nor unlabel one it manages.
        error = _refused(
            lambda: hub.patch_namespace(
                managed, {"metadata": {"labels": {"jupyter-pai/managed": None}}}
            )
        )
        assert error.status == 403
        # Admission: its cluster-wide rights do not reach a namespace it does not manage.
        for write in (
            lambda: hub.create_namespaced_service_account(unmanaged, sa),
            lambda: hub.create_namespaced_config_map(unmanaged, {"metadata": {"name": "c"}}),
            lambda: bind(unmanaged, "jupyter-pai-user"),
            lambda: networking.create_namespaced_network_policy(unmanaged, netpol),
            lambda: hub.create_namespaced_pod(
                unmanaged,
                {
                    "metadata": {"name": "x"},
                    "spec": {"containers": [{"name": "x", "image": "busybox"}]},
                },
            ),
        ):
            error = _refused(write)
            assert error.status == 403 and "jupyter-pai/managed=true" in str(error.body), error.body
    finally:
        for crb in (f"jupyter-pai-cluster-reader-{managed}",):
            try:
                client.RbacAuthorizationV1Api(kube_cluster.api()).delete_cluster_role_binding(crb)
            except ApiException as error:
                if error.status != 404:
                    raise
        for ns in (managed, unmanaged, hub_ns):
            try:
                core.delete_namespace(ns)
            except ApiException as error:
                if error.status != 404:
                    raise
