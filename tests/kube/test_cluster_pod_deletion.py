"""A pod deleted behind its Job controller's back ends as a kubelet ends it: its final
phase written first, so the Job controller counts it and takes off the tracking finalizer,
and only then removed. On the runner node (the pod runner) and on a simulated GPU node
(kwok's Stages) alike; without the final phase such a pod stayed Terminating, and Running,
for good, and whatever read it (a job's STOPPING, a namespace's deletion) waited with it."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException

from tests.cluster import kube, manifests
from tests.cluster.pytest_plugin import TestCluster

from .workloads import delete_job, wait_for

pytestmark = pytest.mark.kube
NS = "default"
FINALIZER = "batch.kubernetes.io/job-tracking"
PLACES = {
    "runner": {manifests.RUNNER_LABEL: "true"},
    "simulated": {manifests.POOL_LABEL: "gpu"},
}


def tracked_job(name: str, node_selector: dict[str, str]) -> dict[str, Any]:
    """One pod, held by the Job controller's tracking finalizer; a failure policy, as the
    native flavour's Jobs have, makes the controller wait for a failed phase."""
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {
            "completionMode": "Indexed",
            "completions": 1,
            "parallelism": 1,
            "backoffLimitPerIndex": 0,
            "podReplacementPolicy": "Failed",
            "podFailurePolicy": {
                "rules": [
                    {
                        "action": "Ignore",
                        "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}],
                    }
                ]
            },
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "nodeSelector": node_selector,
                    "tolerations": [{"operator": "Exists"}],
                    "containers": [
                        {"name": "main", "image": "busybox", "command": ["sleep", "300"]}
                    ],
                }
            },
        },
    }


@pytest.fixture
def job_name(kube_cluster: TestCluster, request: pytest.FixtureRequest) -> Iterator[str]:
    name = f"deleted-pod-{request.node.callspec.id}"
    yield name
    delete_job(kube_cluster.api(), NS, name)


@pytest.mark.parametrize("place", sorted(PLACES))
def test_a_pod_deleted_behind_its_job_ends_failed_and_goes(
    kube_cluster: TestCluster, job_name: str, place: str
) -> None:
    core, batch = kube_cluster.core(), kube.batch(kube_cluster.api())
    batch.create_namespaced_job(NS, tracked_job(job_name, PLACES[place]))
    selector = f"job-name={job_name}"

    def running() -> list[Any]:
        pods = core.list_namespaced_pod(NS, label_selector=selector).items
        return [p for p in pods if p.status.phase == "Running"]

    wait_for(lambda: bool(running()), 60, f"the {place} pod runs")
    pod = running()[0]
    assert FINALIZER in (pod.metadata.finalizers or []), pod.metadata.finalizers
    name = pod.metadata.name
    core.delete_namespaced_pod(name, NS, grace_period_seconds=5)
    start = time.monotonic()

    seen: dict[str, Any] = {}

    def gone() -> bool:
        try:
            seen["pod"] = core.read_namespaced_pod(name, NS)
        except ApiException as error:
            return bool(error.status == 404)
        return False

    try:
        wait_for(gone, 20, f"the deleted {place} pod {name} is removed")
    except AssertionError:
        left = seen["pod"]
        raise AssertionError(
            f"{name} stays: phase {left.status.phase}, finalizers {left.metadata.finalizers}"
            f"\n{kube_cluster.explain(NS, selector)}"
        ) from None
    print(f"{place}: removed {time.monotonic() - start:.1f}s after its deletion")
    # The Job controller counted it as ended (failed: it was stopped), not lost.
    wait_for(
        lambda: (batch.read_namespaced_job(job_name, NS).status.failed or 0) == 1,
        20,
        "the Job counts the pod failed",
    )
