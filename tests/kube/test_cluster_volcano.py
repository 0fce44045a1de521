"""Volcano v1.15.1 in the test control plane, for real: vc-scheduler gang-places
`batch.volcano.sh` Jobs on the simulated GPU nodes, queues cap their GPUs, the admission
webhook validates and defaults vcjobs, and a vcjob on the runner node runs its command."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest
from kubernetes.client.exceptions import ApiException

from tests.cluster import kube, manifests
from tests.cluster.pytest_plugin import TestCluster

from .workloads import (
    bound,
    create_vcjob,
    delete_vcjob,
    job_pods,
    read_vcjob,
    vcjob,
    vcjob_phase,
    vcjob_pod_group,
    wait_for,
)

pytestmark = pytest.mark.kube
NS = "default"


@pytest.fixture
def pool(kube_cluster: TestCluster, request: pytest.FixtureRequest) -> Iterator[dict[str, str]]:
    """A private pool of 4 nodes x 8 GPUs (its node selector), so tests do not see each
    other's pods."""
    name = "vc-" + request.node.name.replace("_", "-")[-37:].strip("-").lower()
    kube_cluster.add_nodes(manifests.NodeShape(pool=name, count=4, gpus=8))
    yield {manifests.POOL_LABEL: name}
    kube_cluster.remove_nodes(name)


def _message(error: ApiException) -> str:
    return str(json.loads(error.body or "{}").get("message"))


def _diagnosis(cluster: TestCluster, ns: str, name: str) -> str:
    """What a vcjob that did not get where it should is doing: its status, its
    PodGroup's, its pods and the events about them, and what else holds the nodes."""
    api = cluster.api()
    core = kube.core(api)
    lines = [f"vcjob {ns}/{name}: {read_vcjob(api, ns, name).get('status')}"]
    group = vcjob_pod_group(api, ns, name)
    lines.append(f"podgroup: {group and group.get('status')}")
    names = {group["metadata"]["name"]} if group else set()
    for p in job_pods(core, ns, name):
        names.add(p.metadata.name)
        lines.append(f"pod {p.metadata.name}: {p.status.phase} on {p.spec.node_name}")
        for c in p.status.container_statuses or []:
            lines.append(f"  container {c.name}: {c.state}")
        try:
            log = core.read_namespaced_pod_log(p.metadata.name, ns)
        except Exception as error:  # a diagnosis: whatever the API answers
            log = f"(no log: {error})"
        lines.append(f"  log: {log[-2000:]!r}")
    for event in core.list_namespaced_event(ns).items:
        if event.involved_object.name in names or name in (event.involved_object.name or ""):
            lines.append(f"event {event.involved_object.name}: {event.reason} {event.message}")
    for p in core.list_pod_for_all_namespaces().items:
        if p.spec.node_name in cluster.runner_nodes and p.status.phase not in (
            "Succeeded",
            "Failed",
        ):
            lines.append(
                f"on the runner: {p.metadata.namespace}/{p.metadata.name} {p.status.phase}"
            )
    return "\n".join(lines)


def _group_phase(api: object, name: str) -> str | None:
    group = vcjob_pod_group(api, NS, name)
    return None if group is None else group.get("status", {}).get("phase")


def test_vcjob_gang_is_placed_whole(kube_cluster: TestCluster, pool: dict[str, str]) -> None:
    api = kube_cluster.api()
    core = kube.core(api)
    create_vcjob(api, NS, vcjob("vc-gang-3x2", 3, 2, pool, min_available=3))
    try:
        wait_for(lambda: bound(job_pods(core, NS, "vc-gang-3x2")) == 3, 60, "3 pods bound")
        pods = job_pods(core, NS, "vc-gang-3x2")
        assert all(p.spec.scheduler_name == "volcano" for p in pods)
        assert all(p.spec.node_name.startswith(pool[manifests.POOL_LABEL]) for p in pods)
        wait_for(lambda: _group_phase(api, "vc-gang-3x2") == "Running", 60, "PodGroup Running")
        group = vcjob_pod_group(api, NS, "vc-gang-3x2")
        assert group is not None and group["spec"]["minMember"] == 3
        assert group["spec"]["queue"] == "default"
        wait_for(lambda: vcjob_phase(api, NS, "vc-gang-3x2") == "Running", 60, "vcjob Running")
    finally:
        delete_vcjob(api, NS, "vc-gang-3x2")


def test_vcjob_gang_that_cannot_fit_stays_unbound(
    kube_cluster: TestCluster, pool: dict[str, str]
) -> None:
    api = kube_cluster.api()
    core = kube.core(api)
    # 3 of the 4 nodes full: 8 GPUs free, the gang needs 4 x 4 = 16.
    create_vcjob(api, NS, vcjob("vc-blocker", 3, 8, pool))
    try:
        wait_for(lambda: bound(job_pods(core, NS, "vc-blocker")) == 3, 60, "blocker bound")
        create_vcjob(api, NS, vcjob("vc-waiter", 4, 4, pool))
        wait_for(lambda: _group_phase(api, "vc-waiter") is not None, 30, "waiter's PodGroup")
        deadline = time.monotonic() + 8
        while time.monotonic() < deadline:  # 2 of its pods would fit; none may be bound
            assert bound(job_pods(core, NS, "vc-waiter")) == 0
            assert _group_phase(api, "vc-waiter") in ("Pending", "Inqueue")
            time.sleep(0.3)
        delete_vcjob(api, NS, "vc-blocker")
        wait_for(
            lambda: bound(job_pods(core, NS, "vc-waiter"), active_only=True) == 4,
            90,
            "the gang is placed once capacity frees",
        )
        wait_for(lambda: _group_phase(api, "vc-waiter") == "Running", 60, "PodGroup Running")
    finally:
        delete_vcjob(api, NS, "vc-blocker")
        delete_vcjob(api, NS, "vc-waiter")


def test_vcjob_over_queue_capability_waits_while_default_runs(
    kube_cluster: TestCluster, pool: dict[str, str]
) -> None:
    api = kube_cluster.api()
    core = kube.core(api)
    cap = manifests.VIRTUAL_CLUSTERS["research"]
    assert cap is not None and cap < 16
    queue = kube.custom(api).get_cluster_custom_object(
        "scheduling.volcano.sh", "v1beta1", "queues", "research"
    )
    assert queue["spec"]["capability"][manifests.GPU_RESOURCE] == str(cap)
    create_vcjob(api, NS, vcjob("vc-in-research", 4, 4, pool, queue="research"))
    create_vcjob(api, NS, vcjob("vc-in-default", 4, 4, pool, queue="default"))
    try:
        wait_for(
            lambda: bound(job_pods(core, NS, "vc-in-default")) == 4, 60, "the default job runs"
        )
        deadline = time.monotonic() + 6
        while time.monotonic() < deadline:  # 16 GPUs free in the pool, 8 for research
            assert bound(job_pods(core, NS, "vc-in-research")) == 0
            assert _group_phase(api, "vc-in-research") in (None, "Pending")
            time.sleep(0.3)
        assert vcjob_phase(api, NS, "vc-in-research") == "Pending"
        # The scheduler says why: the queue, not the nodes.
        group = vcjob_pod_group(api, NS, "vc-in-research")
        assert group is not None

        def says_queue_is_full() -> bool:
            events = core.list_namespaced_event(
                NS, field_selector=f"involvedObject.name={group['metadata']['name']}"
            ).items
            return any("queue resource quota insufficient" in (e.message or "") for e in events)

        wait_for(says_queue_is_full, 30, "an event: queue resource quota insufficient")
    finally:
        delete_vcjob(api, NS, "vc-in-research")
        delete_vcjob(api, NS, "vc-in-default")


def test_admission_webhook_rejects_invalid_and_sets_defaults(kube_cluster: TestCluster) -> None:
    api = kube_cluster.api()
    selector = {manifests.POOL_LABEL: "gpu"}
    # More members than replicas: refused (the chart's ValidatingAdmissionPolicy or the
    # webhook, whichever answers first).
    with pytest.raises(ApiException) as refused:
        create_vcjob(api, NS, vcjob("vc-too-few", 3, 0, selector, min_available=4))
    assert refused.value.status in (400, 422)
    assert "minAvailable" in _message(refused.value)
    # A queue that does not exist: only the webhook can know (it reads the queues).
    with pytest.raises(ApiException) as no_queue:
        create_vcjob(api, NS, vcjob("vc-no-queue", 1, 0, selector, queue="no-such-queue"))
    message = _message(no_queue.value)
    assert message.startswith('admission webhook "validatejob.volcano.sh" denied')
    assert 'queue.scheduling.volcano.sh "no-such-queue" not found' in message
    # Defaults that only the mutating webhook sets (per task; the policies cannot).
    job = vcjob("vc-defaults", 2, 0, selector, min_available=1)
    task = job["spec"]["tasks"][0]
    del task["name"], job["spec"]["queue"], job["spec"]["schedulerName"]
    create_vcjob(api, NS, job)
    try:
        spec = read_vcjob(api, NS, "vc-defaults")["spec"]
        assert spec["queue"] == "default"
        assert spec["schedulerName"] == "volcano"
        assert spec["tasks"][0]["name"] == "default0"
        assert spec["tasks"][0]["minAvailable"] == 2
        assert spec["tasks"][0]["maxRetry"] == 3
    finally:
        delete_vcjob(api, NS, "vc-defaults")


def test_vcjob_on_runner_node_runs_and_completes(kube_cluster: TestCluster) -> None:
    ns = "alice"
    api = kube_cluster.api("alice")  # her own rights on vcjobs
    script = "import os; print('volcano task', os.environ['VK_TASK_INDEX'], 'done')"
    job = vcjob(
        "vc-runs",
        2,
        0,
        {manifests.RUNNER_LABEL: "true"},
        command=["python", "-c", script],
    )
    create_vcjob(api, ns, job)
    try:
        core = kube.core(api)
        try:
            wait_for(lambda: vcjob_phase(api, ns, "vc-runs") == "Completed", 90, "Completed")
        except AssertionError as timeout:
            raise AssertionError(_diagnosis(kube_cluster, ns, "vc-runs")) from timeout
        pods = job_pods(core, ns, "vc-runs")
        assert len(pods) == 2
        assert all(p.status.phase == "Succeeded" for p in pods)
        logs = sorted(core.read_namespaced_pod_log(p.metadata.name, ns) for p in pods)
        assert logs == ["volcano task 0 done\n", "volcano task 1 done\n"]
        history = [c["status"] for c in read_vcjob(api, ns, "vc-runs")["status"]["conditions"]]
        assert history[-2:] == ["Running", "Completed"]
    finally:
        delete_vcjob(api, ns, "vc-runs")
