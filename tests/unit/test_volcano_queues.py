"""Volcano Queues as OpenPAI's virtual clusters (capacity plugin semantics), and the words
a reclaimed job waits with."""

from __future__ import annotations

from typing import Any

from jupyter_pai.backends.kubernetes.flavors.volcano_queues import (
    preemption_reason,
    queue_manifest,
    queue_virtual_clusters,
)
from jupyter_pai.backends.models import Resources
from jupyter_pai.spec import parse_job

GPU = "nvidia.com/gpu"
JOB = parse_job(
    """
protocolVersion: 2
name: big
type: job
defaults: {virtualCluster: a}
taskRoles:
  worker: {instances: 2, commands: [sleep 1], resourcePerInstance: {gpu: 2}}
"""
).job


def _with_use(queue: dict[str, Any], gpus: int) -> dict[str, Any]:
    return {**queue, "status": {"allocated": {GPU: str(gpus)}, "state": "Open"}}


def test_queue_manifest_maps_share_borrow_and_lend() -> None:
    assert queue_manifest("a", 2)["spec"] == {
        "reclaimable": True,
        "weight": 1,
        "deserved": {GPU: "2"},
    }
    spec = queue_manifest("b", 2, borrow=False, lend=False)["spec"]
    assert spec["guarantee"] == {"resource": {GPU: "2"}}  # reserved: never lent
    assert spec["capability"] == {GPU: "2"}  # never more than its share


def test_borrowed_and_lent_gpus_on_a_cluster_of_four() -> None:
    queues = [
        _with_use(queue_manifest("a", 2), 4),
        _with_use(queue_manifest("b", 2), 0),
        _with_use(queue_manifest("c", 0, borrow=False), 0),
        {"metadata": {"name": "root"}, "spec": {}},
    ]
    vcs = {v.name: v for v in queue_virtual_clusters(queues, [], Resources(gpu=4), GPU)}
    assert sorted(vcs) == ["a", "b", "c"]  # root takes no jobs
    a, b = vcs["a"], vcs["b"]
    assert (a.guaranteed_gpus, a.borrowed_gpus, a.lent_gpus, a.may_borrow) == (2, 2, 0, True)
    assert (b.guaranteed_gpus, b.borrowed_gpus, b.lent_gpus, b.may_lend) == (2, 0, 2, True)
    assert a.capacity.gpu == 4


def test_a_reserved_share_is_never_lent_nor_in_others_capacity() -> None:
    queues = [
        _with_use(queue_manifest("a", 2), 2),
        _with_use(queue_manifest("b", 2, lend=False), 0),
    ]
    vcs = {v.name: v for v in queue_virtual_clusters(queues, [], Resources(gpu=4), GPU)}
    assert vcs["a"].capacity.gpu == 2  # b's guarantee is out of a's reach
    assert (vcs["b"].may_lend, vcs["b"].lent_gpus) == (False, 0)


def test_queues_without_shares_show_no_sharing() -> None:
    queues = [{"metadata": {"name": "default"}, "spec": {"weight": 1}}]
    (vc,) = queue_virtual_clusters(queues, [], Resources(gpu=4), GPU)
    assert vc.guaranteed_gpus is None and not vc.may_borrow


def _event(kind: str, name: str, reason: str, message: str, when: str) -> dict[str, Any]:
    return {
        "involvedObject": {"kind": kind, "name": name},
        "reason": reason,
        "message": message,
        "lastTimestamp": when,
    }


def test_a_reclaimed_job_names_the_vc_and_the_gpus() -> None:
    queues = [_with_use(queue_manifest("a", 2), 0), _with_use(queue_manifest("b", 2), 2)]
    peers = {v.name: v for v in queue_virtual_clusters(queues, [], Resources(gpu=4), GPU)}
    started = _event("Pod", "alice-big-x-worker-1", "Started", "", "2026-11-23T14:18:53Z")
    evicted = _event(
        "Pod",
        "alice-big-x-worker-1",
        "Evict",
        "Pod is evicted, because of reclaim",
        "2026-11-23T14:18:55Z",
    )
    group = _event("PodGroup", "alice-big-x-1", "Evict", "reclaim", "2026-11-23T14:18:55Z")
    reason = preemption_reason(JOB, "a", [started, evicted, group], peers)
    assert reason == "preempted: VC b reclaimed 2 GPUs"
    assert preemption_reason(JOB, "a", [group], peers) == "preempted: VC b reclaimed its GPUs"
    # Started again since: no longer the reason.
    later = {**started, "lastTimestamp": "2026-11-23T14:19:30Z"}
    assert preemption_reason(JOB, "a", [evicted, later], peers) is None
    assert preemption_reason(JOB, "a", [started], peers) is None


def test_native_quotas_neither_borrow_nor_lend() -> None:
    """The other flavor's answer, for contrast: a ResourceQuota is a hard cap."""
    from jupyter_pai.backends.kubernetes.flavors import FLAVORS
    from jupyter_pai.backends.kubernetes.pods import PodOptions
    from jupyter_pai.backends.kubernetes.resources import PRIORITY_CLASS

    native = FLAVORS["native"](PodOptions(namespace="alice"))
    listing = {PRIORITY_CLASS: [{"metadata": {"name": "vc-a"}}]}
    (vc,) = native.virtual_clusters(lambda k: listing.get(k, []), [], Resources(gpu=4)) or []
    assert (vc.may_borrow, vc.may_lend, vc.borrowed_gpus, vc.lent_gpus) == (False, False, 0, 0)
