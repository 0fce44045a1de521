"""Kueue's ClusterQueues as virtual clusters (quota, cohort borrowing and lending) and a
Workload's conditions as the reason a job waits, in words. Plain dicts as the API returns
them; the real thing runs in tests/kube/test_kueue_reclaim.py."""

from __future__ import annotations

from typing import Any

from jupyter_pai.backends.kubernetes.flavors.kueue_queues import (
    queue_virtual_clusters,
    workload_reason,
)
from jupyter_pai.backends.models import Resources, VirtualCluster
from jupyter_pai.spec import parse_job

GPU = "nvidia.com/gpu"
CLUSTER = Resources(gpu=4, cpu=16, memory_mb=65536)
JOB = parse_job(
    """
protocolVersion: 2
name: t
type: job
defaults: {virtualCluster: research}
taskRoles:
  worker: {instances: 2, commands: [sleep 1], resourcePerInstance: {gpu: 2}}
"""
).job


def cq(name: str, nominal: int, reserved: int = 0, borrowed: int = 0, **limits: Any) -> Any:
    quota: dict[str, Any] = {"name": GPU, "nominalQuota": str(nominal)}
    quota.update({k: str(v) for k, v in limits.items() if k != "cohort"})
    spec: dict[str, Any] = {
        "resourceGroups": [{"flavors": [{"name": "gpu", "resources": [quota]}]}]
    }
    if limits.get("cohort"):
        spec["cohortName"] = limits["cohort"]
    usage = {"name": GPU, "total": str(reserved), "borrowed": str(borrowed)}
    return {
        "metadata": {"name": name},
        "spec": spec,
        "status": {"flavorsReservation": [{"name": "gpu", "resources": [usage]}]},
    }


def lq(name: str, target: str | None = None) -> Any:
    return {"metadata": {"name": name}, "spec": {"clusterQueue": target or name}}


def test_a_borrower_and_its_lender_in_one_cohort() -> None:
    queues = [cq("a", 2, reserved=4, borrowed=2, cohort="c"), cq("b", 2, cohort="c")]
    vcs = {v.name: v for v in queue_virtual_clusters([lq("a"), lq("b")], queues, [], CLUSTER, GPU)}
    a, b = vcs["a"], vcs["b"]
    assert (a.capacity.gpu, a.used.gpu, a.guaranteed_gpus, a.borrowed_gpus) == (4, 4, 2, 2)
    assert (b.capacity.gpu, b.used.gpu, b.guaranteed_gpus, b.lent_gpus) == (4, 0, 2, 2)
    assert a.may_borrow and a.may_lend and b.description == "Kueue ClusterQueue b, cohort c"


def test_limits_bound_what_is_borrowed_and_lent() -> None:
    queues = [
        cq("a", 2, cohort="c", borrowingLimit=1),
        cq("b", 2, cohort="c", lendingLimit=0),
        cq("solo", 8),
    ]
    vcs = {
        v.name: v
        for v in queue_virtual_clusters(
            [lq("a"), lq("b"), lq("research", "solo"), lq("gone")], queues, [], CLUSTER, GPU
        )
    }
    # A LocalQueue whose ClusterQueue is gone is no VC.
    assert sorted(vcs) == ["a", "b", "research"]
    assert vcs["a"].capacity.gpu == 2  # b lends nothing
    assert not vcs["b"].may_lend and vcs["b"].capacity.gpu == 4  # its 2 and a's 2
    # Outside a cohort: the nominal quota (bounded by the cluster), no sharing shown.
    assert vcs["research"].capacity.gpu == 4 and vcs["research"].guaranteed_gpus is None


def _workload(*conditions: dict[str, str], active: bool = True) -> Any:
    return {
        "metadata": {"name": "w"},
        "spec": {"active": active},
        "status": {"conditions": list(conditions)},
    }


def test_waiting_for_quota_says_what_is_reserved() -> None:
    vc = queue_virtual_clusters(
        [lq("research")], [cq("research", 8, reserved=8)], [], CLUSTER, GPU
    )[0]
    message = (
        "couldn't assign flavors to pod set worker: insufficient unused quota for "
        "nvidia.com/gpu in flavor gpu, 4 more needed"
    )
    reserved = {"type": "QuotaReserved", "status": "False", "reason": "Pending", "message": message}
    vc = vc.model_copy(update={"capacity": Resources(gpu=8)})
    assert (
        workload_reason(JOB, _workload(reserved), vc, "research")
        == "ClusterQueue research: 8 of 8 GPUs reserved, needs 4"
    )
    other = {**reserved, "message": "LocalQueue research is stopped"}
    assert workload_reason(JOB, _workload(other), vc, "research") == (
        "ClusterQueue research: LocalQueue research is stopped"
    )


def test_admitted_deactivated_missing_and_preempted() -> None:
    admitted = {"type": "Admitted", "status": "True"}
    assert workload_reason(JOB, _workload(admitted), None, "research") is None
    assert workload_reason(JOB, _workload(active=False), None, "research") == "deactivated in Kueue"
    assert workload_reason(JOB, None, None, None) == "no LocalQueue research in this namespace"
    preempted = {
        "type": "Preempted",
        "status": "True",
        "reason": "InCohortReclamation",
        "message": "Preempted to accommodate a workload (UID: u, JobUID: j) due to "
        "reclamation within the cohort; preemptor path: /c/b; preemptee path: /c/a",
    }
    evicted = {"type": "Evicted", "status": "True", "reason": "Preempted"}
    assert workload_reason(JOB, _workload(preempted, evicted), None, "a") == (
        "preempted: ClusterQueue b reclaimed the quota it lent; waiting for 4 GPUs"
    )


def test_a_typed_job_waits_naming_its_types_flavor_quota() -> None:
    typed = parse_job(
        {"name": "h", "image": "i", "command": ["c"], "gpus": "H100-80GB:2", "vc": "research"}
    ).job
    message = (
        "couldn't assign flavors to pod set worker: insufficient unused quota for"
        " nvidia.com/gpu in flavor gpu-h100-80gb, 2 more needed"
    )
    reserved = {"type": "QuotaReserved", "status": "False", "message": message}
    vc = VirtualCluster(
        name="research", capacity=Resources(gpu=4), used=Resources(gpu=2), free=Resources(gpu=2)
    )
    assert workload_reason(typed, _workload(reserved), vc, "research") == (
        "waiting for 2 H100-80GB in ClusterQueue research: its quota of flavor gpu-h100-80gb"
        " is in use, 2 more needed"
    )
