"""The chart's policies for users' namespaces on the real control plane, tried as a user
(bob, in his namespace labelled as the hub labels a user's): no Service but ClusterIP and
no externalIPs; no GPU pod that skips its virtual cluster — on volcano a pod or a Volcano
Job task not Volcano's, on kueue a JobSet naming no LocalQueue or a GPU pod a user makes
himself, on hived a pod not HiveD's, on native a pod of no VC's priority class (a quota of
0 GPUs); on kueue no change to a Workload but its ``spec.active``. What jupyter-pai itself
makes on each flavor passes them, and so does what Kubernetes' controllers make of it."""

from __future__ import annotations

import copy
import json
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException

from jupyter_pai.backends.kubernetes.flavors import FLAVORS, HivedSettings
from jupyter_pai.backends.kubernetes.naming import make_names
from jupyter_pai.backends.kubernetes.pods import PodOptions
from jupyter_pai.spec import parse_job
from tests import podspecs
from tests.cluster import manifests
from tests.cluster.pytest_plugin import TestCluster

from .chart import Manifest, flavor_values, objects, template
from .test_chart_cluster import _apply, _delete

pytestmark = pytest.mark.kube

NS = "bob"
MANAGED = {"jupyter-pai/managed": "true"}
WAIT = 30.0
#: A node no pod gets to: what the tests create is admitted or refused, and never runs.
NOWHERE = {manifests.POOL_LABEL: "nowhere"}

GPU_JOB = """
protocolVersion: 2
name: policy-check
type: job
taskRoles:
  worker:
    instances: 2
    resourcePerInstance: {cpu: 1, memoryMB: 256, gpu: 1}
    commands: ['sleep 1']
"""


def _values(flavor: str) -> dict[str, Any]:
    values = copy.deepcopy(flavor_values(flavor))
    # The test cluster's controllers (kube-controller-manager, Kueue) act as its admin.
    values["controllers"] = {"jobController": ["admin"], "kueue": ["admin"]}
    # Its VCs, whose priority classes the native quota of GPUs outside every VC names.
    values["virtualClusters"] = {
        "default": {"gpus": 24, "borrow": True, "lend": True},
        "research": {"gpus": 8, "borrow": False, "lend": False},
    }
    values["native"] = {"priorityPrefix": "vc-", "quotaNamespaces": [NS]}
    return values


def _policy_objects(flavor: str) -> list[Manifest]:
    wanted = {"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"}
    out = []
    for doc in objects(template(_values(flavor))):
        name = doc["metadata"]["name"]
        if doc["kind"] in wanted and name.startswith("jupyter-pai-user-"):
            out.append(doc)
        elif doc["kind"] == "ResourceQuota" and name == "vc-none":
            out.append(doc)
    return out


@pytest.fixture
def policies(kube_cluster: TestCluster) -> Iterator[Callable[[str], list[Manifest]]]:
    """Apply a flavor's user-namespace policies and make bob's namespace a user's (as the
    hub labels it); all undone after the test."""
    api = kube_cluster.api()
    core = kube_cluster.core()
    done: list[Manifest] = []

    def apply(flavor: str) -> list[Manifest]:
        docs = _policy_objects(flavor)
        for doc in docs:
            _apply(api, doc, dry_run=False)
            done.append(doc)
        return docs

    core.patch_namespace(NS, {"metadata": {"labels": MANAGED}})
    try:
        yield apply
    finally:
        core.patch_namespace(NS, {"metadata": {"labels": {k: None for k in MANAGED}}})
        for doc in reversed(done):
            _delete(api, doc)


def _message(error: ApiException) -> str:
    try:
        return str(json.loads(error.body)["message"])
    except (ValueError, KeyError, TypeError):
        return str(error.body)


def _refused(make: Callable[[], Any], by: str) -> str:
    """Retry ``make`` until refused with a message containing ``by`` (a new policy takes a
    moment to reach admission); what got through meanwhile is deleted by the caller's
    namespace cleanup. Returns the message."""
    deadline = time.monotonic() + WAIT
    while True:
        try:
            make()
        except ApiException as error:
            if by in _message(error):
                assert error.status in (403, 422), error.body
                return _message(error)
            if time.monotonic() >= deadline:
                raise
        assert time.monotonic() < deadline, f"never refused (waited for {by!r})"
        time.sleep(0.5)


def _admitted(make: Callable[[], Any]) -> Any:
    try:
        return make()
    except ApiException as error:
        pytest.fail(f"refused: {_message(error)}")


def _gpu_container(**extra: Any) -> Manifest:
    return {
        "name": "main",
        "image": "busybox",
        "resources": {"limits": {manifests.GPU_RESOURCE: "1"}},
        **extra,
    }


def _pod(name: str, *, gpus: bool, **spec: Any) -> Manifest:
    container = _gpu_container() if gpus else {"name": "main", "image": "busybox"}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"nodeSelector": NOWHERE, "containers": [container], **spec},
    }


def _cleanup_pods(kube_cluster: TestCluster, prefix: str) -> None:
    core = kube_cluster.core()
    for pod in core.list_namespaced_pod(NS).items:
        if pod.metadata.name.startswith(prefix):
            core.delete_namespaced_pod(pod.metadata.name, NS, grace_period_seconds=0)


def test_services_are_cluster_ip_only(
    kube_cluster: TestCluster, policies: Callable[[str], list[Manifest]]
) -> None:
    policies("volcano")
    core = kube_cluster.core("bob")
    suffix = uuid.uuid4().hex[:6]
    made: list[str] = []

    def service(name: str, **spec: Any) -> Callable[[], Any]:
        body = {"metadata": {"name": f"{name}-{suffix}"}, "spec": {"ports": [{"port": 80}], **spec}}

        def create() -> Any:
            out = core.create_namespaced_service(NS, body)
            made.append(out.metadata.name)
            return out

        return create

    try:
        message = _refused(service("np", type="NodePort"), "type ClusterIP only")
        assert "not NodePort" in message
        assert "not LoadBalancer" in _refused(service("lb", type="LoadBalancer"), "ClusterIP")
        assert "ExternalName" in _refused(
            service("en", type="ExternalName", externalName="example.org"), "ClusterIP"
        )
        _refused(service("eip", externalIPs=["198.18.0.1"]), "may not set externalIPs")
        _admitted(service("plain"))
        _admitted(service("headless", clusterIP="None"))
        # Nor by a later change of an admitted one.
        _refused(
            lambda: core.patch_namespaced_service(
                f"plain-{suffix}", NS, {"spec": {"externalIPs": ["198.18.0.1"]}}
            ),
            "may not set externalIPs",
        )
    finally:
        for name in made:
            kube_cluster.core().delete_namespaced_service(name, NS)


def _jupyter_pai_objects(flavor: str) -> list[Manifest]:
    """What jupyter-pai submits for a two-instance GPU job on ``flavor`` (its pods too, where
    the flavor makes them), kept from running."""
    job = parse_job(GPU_JOB, name=f"policy-{flavor}-{uuid.uuid4().hex[:4]}").job
    settings = HivedSettings(cpu_sku="CPU") if flavor == "hived" else None
    options = PodOptions(namespace=NS, node_selector=NOWHERE)
    built = FLAVORS[flavor](options, settings).build(job, make_names(job, "bob"))
    return [o for o in built.objects if o["kind"] not in ("Secret", "ConfigMap")]


def _dry_run(kube_cluster: TestCluster, obj: Manifest) -> None:
    api = kube_cluster.api("bob")
    body = copy.deepcopy(obj)
    body["metadata"]["namespace"] = NS
    from kubernetes import dynamic

    resource = dynamic.DynamicClient(api).resources.get(  # type: ignore[no-untyped-call]
        api_version=body["apiVersion"], kind=body["kind"]
    )
    resource.create(body=body, namespace=NS, dry_run="All")


def test_volcano_gpus_go_through_volcano(
    kube_cluster: TestCluster, policies: Callable[[str], list[Manifest]]
) -> None:
    policies("volcano")
    bob = kube_cluster.core("bob")
    custom = kube_cluster.custom("bob")
    suffix = uuid.uuid4().hex[:6]

    def vcjob(name: str, task_scheduler: str | None) -> Callable[[], Any]:
        spec: Manifest = {"nodeSelector": NOWHERE, "containers": [_gpu_container()]}
        if task_scheduler:
            spec["schedulerName"] = task_scheduler
        body = {
            "apiVersion": "batch.volcano.sh/v1alpha1",
            "kind": "Job",
            "metadata": {"name": f"{name}-{suffix}"},
            "spec": {
                "queue": "default",
                "minAvailable": 1,
                "tasks": [{"name": "main", "replicas": 1, "template": {"spec": spec}}],
            },
        }
        return lambda: custom.create_namespaced_custom_object(
            "batch.volcano.sh", "v1alpha1", NS, "jobs", body, dry_run="All"
        )

    try:
        bypass = lambda: bob.create_namespaced_pod(  # noqa: E731
            NS, _pod(f"bypass-{suffix}", gpus=True, schedulerName="default-scheduler")
        )
        _refused(bypass, "must be scheduled by Volcano")
        _refused(vcjob("bypass", "default-scheduler"), "GPU tasks are scheduled by Volcano")
        _admitted(vcjob("queued", None))
        _admitted(vcjob("queued", "volcano"))
        pod = _pod(f"queued-{suffix}", gpus=True, schedulerName="volcano")
        _admitted(lambda: bob.create_namespaced_pod(NS, pod, dry_run="All"))
        # A pod without GPUs (a storage helper) is anyone's to schedule.
        _admitted(lambda: bob.create_namespaced_pod(NS, _pod(f"cpu-{suffix}", gpus=False)))
        for obj in _jupyter_pai_objects("volcano"):
            _admitted(lambda obj=obj: _dry_run(kube_cluster, obj))
    finally:
        _cleanup_pods(kube_cluster, f"cpu-{suffix}")
        _cleanup_pods(kube_cluster, f"bypass-{suffix}")


def _jobset(name: str, queue: str | None) -> Manifest:
    # Simulated: running until deleted, on a GPU node.
    pod = {
        "metadata": {"annotations": {}},
        "spec": {
            "restartPolicy": "Never",
            "nodeSelector": {manifests.POOL_LABEL: "gpu"},
            "containers": [_gpu_container()],
        },
    }
    return podspecs.jobset(name, queue, pod)


def test_kueue_gpus_go_through_a_local_queue(
    kube_cluster: TestCluster, policies: Callable[[str], list[Manifest]]
) -> None:
    policies("kueue")
    bob = kube_cluster.core("bob")
    custom = kube_cluster.custom("bob")
    admin = kube_cluster.custom()
    suffix = uuid.uuid4().hex[:6]
    group = ("jobset.x-k8s.io", "v1alpha2", NS, "jobsets")
    made: list[str] = []

    def create(name: str, queue: str | None, dry: bool = False) -> Callable[[], Any]:
        def make() -> Any:
            out = custom.create_namespaced_custom_object(
                *group, _jobset(name, queue), **({"dry_run": "All"} if dry else {})
            )
            if not dry:
                made.append(name)
            return out

        return make

    queues = ("kueue.x-k8s.io", "v1beta2", NS, "localqueues")
    default_queue = admin.get_namespaced_custom_object(*queues, "default")
    try:
        # Kueue itself puts a JobSet that names no queue into a LocalQueue called "default"
        # where there is one; in a namespace without, Kueue leaves it alone, and it would run
        # on GPUs no quota counts.
        admin.delete_namespaced_custom_object(*queues, "default")
        try:
            _refused(create(f"noqueue-{suffix}", None, dry=True), "names its virtual cluster's")
        finally:
            kept = {
                k: default_queue["metadata"][k]
                for k in ("name", "labels")
                if k in default_queue["metadata"]
            }
            admin.create_namespaced_custom_object(*queues, {**default_queue, "metadata": kept})
        bypass = lambda: bob.create_namespaced_pod(NS, _pod(f"bypass-{suffix}", gpus=True))  # noqa: E731
        _refused(bypass, "comes only from a Job that Kueue admitted")
        _admitted(lambda: bob.create_namespaced_pod(NS, _pod(f"cpu-{suffix}", gpus=False)))
        for obj in _jupyter_pai_objects("kueue"):
            _admitted(lambda obj=obj: _dry_run(kube_cluster, obj))
        # Through its LocalQueue, the Job controller's GPU pods are made (the policy holds
        # users, not Kubernetes' controllers).
        name = f"queued-{suffix}"
        _admitted(create(name, "default"))
        core = kube_cluster.core()
        deadline = time.monotonic() + 60
        while not [
            p for p in core.list_namespaced_pod(NS).items if p.metadata.name.startswith(name)
        ]:
            assert time.monotonic() < deadline, kube_cluster.explain(NS)
            time.sleep(0.5)

        # Its Workload: bob may stop it (spec.active), and change nothing else of it.
        workloads = ("kueue.x-k8s.io", "v1beta2", NS, "workloads")
        deadline = time.monotonic() + 30
        while True:
            found = [
                w
                for w in kube_cluster.custom().list_namespaced_custom_object(*workloads)["items"]
                if any(o["name"] == name for o in w["metadata"].get("ownerReferences") or [])
            ]
            if found:
                break
            assert time.monotonic() < deadline, "no Workload for the JobSet"
            time.sleep(0.5)
        workload = found[0]["metadata"]["name"]
        _refused(
            lambda: custom.patch_namespaced_custom_object(
                *workloads, workload, {"spec": {"priority": 1000}}
            ),
            "spec.active only",
        )
        # Kueue's own controller may (its priority follows the job's priority class).
        _admitted(
            lambda: admin.patch_namespaced_custom_object(
                *workloads, workload, {"spec": {"priority": 0}}
            )
        )
        _admitted(
            lambda: custom.patch_namespaced_custom_object(
                *workloads, workload, {"spec": {"active": False}}
            )
        )
    finally:
        for name in made:
            admin.delete_namespaced_custom_object(*group, name, propagation_policy="Background")
        _cleanup_pods(kube_cluster, f"cpu-{suffix}")
        _cleanup_pods(kube_cluster, f"bypass-{suffix}")


def test_hived_gpus_go_through_hived(
    kube_cluster: TestCluster, policies: Callable[[str], list[Manifest]]
) -> None:
    policies("hived")
    bob = kube_cluster.core("bob")
    suffix = uuid.uuid4().hex[:6]
    try:
        bypass = lambda: bob.create_namespaced_pod(NS, _pod(f"bypass-{suffix}", gpus=True))  # noqa: E731
        _refused(bypass, "must be scheduled by HiveD")
        pod = _pod(f"hived-{suffix}", gpus=True, schedulerName="hivedscheduler")
        _admitted(lambda: bob.create_namespaced_pod(NS, pod, dry_run="All"))
        for obj in _jupyter_pai_objects("hived"):
            _admitted(lambda obj=obj: _dry_run(kube_cluster, obj))
    finally:
        _cleanup_pods(kube_cluster, f"bypass-{suffix}")


def test_native_gpus_outside_every_vc_get_no_quota(
    kube_cluster: TestCluster, policies: Callable[[str], list[Manifest]]
) -> None:
    docs = policies("native")
    assert [d["metadata"]["name"] for d in docs if d["kind"] == "ResourceQuota"] == ["vc-none"]
    bob = kube_cluster.core("bob")
    suffix = uuid.uuid4().hex[:6]
    try:
        no_class = lambda: bob.create_namespaced_pod(NS, _pod(f"none-{suffix}", gpus=True))  # noqa: E731
        assert "exceeded quota: vc-none" in _refused(no_class, "exceeded quota: vc-none")
        other = _pod(f"other-{suffix}", gpus=True, priorityClassName="system-cluster-critical")
        _refused(lambda: bob.create_namespaced_pod(NS, other), "exceeded quota: vc-none")
        in_vc = _pod(f"vc-{suffix}", gpus=True, priorityClassName="vc-default")
        _admitted(lambda: bob.create_namespaced_pod(NS, in_vc, dry_run="All"))
        _admitted(lambda: bob.create_namespaced_pod(NS, _pod(f"cpu-{suffix}", gpus=False)))
        for obj in _jupyter_pai_objects("native"):
            _admitted(lambda obj=obj: _dry_run(kube_cluster, obj))
    finally:
        for prefix in ("none-", "other-", "cpu-"):
            _cleanup_pods(kube_cluster, f"{prefix}{suffix}")
