"""Kueue v0.19.2 and JobSet v0.12.0 in the test control plane, for real: a JobSet in a
LocalQueue is suspended by Kueue's webhook, admitted into its ClusterQueue's GPU quota
and run by JobSet's controller; one over the quota of `research` stays suspended with
its Workload saying why; JobSet's webhook validates."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException

from tests.cluster import kube, manifests
from tests.cluster.pytest_plugin import TestCluster

pytestmark = pytest.mark.kube
NS = "default"
RUNNER = {manifests.RUNNER_LABEL: "true"}
GPU_POOL = {manifests.POOL_LABEL: "gpu"}


def jobset(
    name: str, vc: str, replicas: int, gpus: int, selector: dict[str, str], command: list[str]
) -> dict[str, Any]:
    pod = {
        "spec": {
            "restartPolicy": "Never",
            "nodeSelector": selector,
            "containers": [
                {
                    "name": "main",
                    "image": "busybox",
                    "command": command,
                    "resources": {
                        "requests": {manifests.GPU_RESOURCE: str(gpus)},
                        "limits": {manifests.GPU_RESOURCE: str(gpus)},
                    },
                }
            ],
        }
    }
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": name, "labels": {"kueue.x-k8s.io/queue-name": vc}},
        "spec": {
            "suspend": False,  # Kueue's webhook suspends it until admitted
            "replicatedJobs": [
                {
                    "name": "w",
                    "replicas": 1,
                    "template": {
                        "spec": {
                            "completionMode": "Indexed",
                            "completions": replicas,
                            "parallelism": replicas,
                            "backoffLimit": 0,
                            "template": pod,
                        }
                    },
                }
            ],
        },
    }


@pytest.fixture
def created(kube_cluster: TestCluster) -> Iterator[Callable[[dict[str, Any]], dict[str, Any]]]:
    custom = kube.custom(kube_cluster.api())
    names: list[str] = []

    def create(body: dict[str, Any]) -> dict[str, Any]:
        made = custom.create_namespaced_custom_object(
            "jobset.x-k8s.io", "v1alpha2", NS, "jobsets", body
        )
        names.append(body["metadata"]["name"])
        return dict(made)

    yield create
    for name in names:
        custom.delete_namespaced_custom_object(
            "jobset.x-k8s.io", "v1alpha2", NS, "jobsets", name, propagation_policy="Background"
        )


def _workload(cluster: TestCluster, jobset_name: str) -> dict[str, Any] | None:
    items = kube.custom(cluster.api()).list_namespaced_custom_object(
        "kueue.x-k8s.io", "v1beta2", NS, "workloads"
    )["items"]
    for w in items:
        if any(o["name"] == jobset_name for o in w["metadata"].get("ownerReferences") or []):
            return dict(w)
    return None


def _condition(workload: dict[str, Any] | None, kind: str) -> dict[str, Any]:
    for c in ((workload or {}).get("status") or {}).get("conditions") or []:
        if c["type"] == kind:
            return dict(c)
    return {}


def _wait(check: Callable[[], Any], timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.3)
    raise AssertionError(f"timed out waiting for {what}")


def test_a_jobset_is_admitted_and_runs(kube_cluster: TestCluster, created: Any) -> None:
    body = jobset(
        "kq-runs", "default", 2, 1, RUNNER, ["sh", "-c", "echo hi from $JOB_COMPLETION_INDEX"]
    )
    made = created(body)
    assert made["spec"]["suspend"] is True  # Kueue's mutating webhook
    workload = _wait(
        lambda: (
            (w := _workload(kube_cluster, "kq-runs"))
            and _condition(w, "Admitted").get("status") == "True"
            and w
        ),
        30,
        "the Workload admitted",
    )
    assignment = workload["status"]["admission"]["podSetAssignments"][0]
    assert assignment["flavors"] == {manifests.GPU_RESOURCE: "gpu"}
    custom = kube.custom(kube_cluster.api())

    def completed() -> bool:
        js = custom.get_namespaced_custom_object(
            "jobset.x-k8s.io", "v1alpha2", NS, "jobsets", "kq-runs"
        )
        return any(
            c["type"] == "Completed" and c["status"] == "True"
            for c in (js.get("status") or {}).get("conditions") or []
        )

    _wait(completed, 60, "the JobSet Completed")
    core = kube.core(kube_cluster.api())
    pods = core.list_namespaced_pod(
        NS, label_selector="jobset.sigs.k8s.io/jobset-name=kq-runs"
    ).items
    logs = sorted(core.read_namespaced_pod_log(p.metadata.name, NS) for p in pods)
    assert logs == ["hi from 0\n", "hi from 1\n"]


def test_over_quota_waits_with_the_reason(kube_cluster: TestCluster, created: Any) -> None:
    created(jobset("kq-big", "research", 2, 8, GPU_POOL, ["sleep", "1"]))
    workload = _wait(
        lambda: (
            (w := _workload(kube_cluster, "kq-big"))
            and _condition(w, "QuotaReserved").get("message")
            and w
        ),
        30,
        "the Workload's QuotaReserved condition",
    )
    reserved = _condition(workload, "QuotaReserved")
    assert reserved["status"] == "False", reserved
    assert "insufficient quota" in reserved["message"], reserved
    print("\nQuotaReserved:", reserved["message"])
    js = kube.custom(kube_cluster.api()).get_namespaced_custom_object(
        "jobset.x-k8s.io", "v1alpha2", NS, "jobsets", "kq-big"
    )
    assert js["spec"]["suspend"] is True


def test_jobset_webhook_validates(kube_cluster: TestCluster, created: Any) -> None:
    body = jobset("kq-bad", "default", 1, 1, RUNNER, ["true"])
    body["spec"]["replicatedJobs"][0]["name"] = "Not_A_DNS_Name"
    with pytest.raises(ApiException) as raised:
        created(body)
    assert raised.value.status in (400, 422)
    message = str(json.loads(raised.value.body or "{}").get("message"))
    assert "jobset" in message.lower(), message
