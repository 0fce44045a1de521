"""Volcano Queues as OpenPAI's virtual clusters, with the ``capacity`` plugin's semantics:
a queue's guaranteed share is what the ``reclaim`` action takes back for it, its idle
share is lent to queues that may borrow, and what a queue holds beyond its share is on
loan and reclaimable.

* guaranteed share → ``deserved``;
* may lend: no ``guarantee``; may not lend → ``guarantee`` = the share (reserved: other
  queues never use it, even idle);
* may borrow: no ``capability`` (or one above ``deserved``); may not → ``capability`` =
  the share;
* ``reclaimable: true``: what a queue holds beyond ``deserved`` can be taken back (a
  borrower that cannot be reclaimed would keep a lender's share for good).

:func:`queue_manifest` writes such a queue; :func:`queue_virtual_clusters` reads any."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ....spec.protocol import JobProtocol
from ...models import JobSummary, Resources, VirtualCluster
from .. import vc_usage
from ..pods import Manifest
from ..resources import Kind
from ..states import Obj

VOLCANO_QUEUE = Kind("scheduling.volcano.sh/v1beta1", "Queue", "queues", namespaced=False)

#: The parent of every queue, added by vc-controller-manager; Volcano refuses jobs in it.
ROOT_QUEUE = "root"


def queue_manifest(
    name: str, share: int, *, borrow: bool = True, lend: bool = True, gpu: str = vc_usage.GPU
) -> Manifest:
    """The Volcano Queue of a virtual cluster guaranteed ``share`` GPUs that may borrow
    other VCs' idle GPUs and may lend its own (see the module docstring)."""
    gpus = {gpu: str(share)}
    spec: dict[str, Any] = {"reclaimable": True, "weight": 1, "deserved": dict(gpus)}
    if not lend:
        spec["guarantee"] = {"resource": dict(gpus)}
    if not borrow:
        spec["capability"] = dict(gpus)
    return {
        "apiVersion": VOLCANO_QUEUE.api_version,
        "kind": "Queue",
        "metadata": {"name": name},
        "spec": spec,
    }


@dataclass(frozen=True)
class QueueShare:
    """A queue's GPUs as the capacity plugin sees them."""

    deserved: int  # max(deserved, guarantee): what reclaim brings it back to
    reserved: int  # guarantee: never lent
    used: int

    @classmethod
    def of(cls, queue: Obj, gpu: str) -> QueueShare:
        spec = queue.get("spec") or {}
        reserved = vc_usage.resources((spec.get("guarantee") or {}).get("resource"), gpu).gpu
        return cls(
            deserved=max(vc_usage.resources(spec.get("deserved"), gpu).gpu, reserved),
            reserved=reserved,
            used=vc_usage.resources((queue.get("status") or {}).get("allocated"), gpu).gpu,
        )


def queue_capacity(queue: Obj, cluster: Resources, gpu: str, others_reserved: int = 0) -> Resources:
    """The most the queue's jobs may hold, as the capacity plugin's realCapability: its
    capability where set, and never what other queues reserve (``guarantee``)."""
    capability = (queue.get("spec") or {}).get("capability") or {}
    r = vc_usage.resources(capability, gpu)
    gpus = (
        cluster.gpu
        if cluster.gpu >= vc_usage.UNLIMITED.gpu
        else max(0, cluster.gpu - others_reserved)
    )
    return Resources(
        gpu=min(r.gpu, gpus) if gpu in capability else gpus,
        cpu=r.cpu if "cpu" in capability else cluster.cpu,
        memory_mb=r.memory_mb if "memory" in capability else cluster.memory_mb,
    )


def queue_virtual_clusters(
    queues: list[Obj], jobs: list[JobSummary], cluster: Resources, gpu: str
) -> list[VirtualCluster]:
    """Each queue as a VC. Where some queue has a share (``deserved`` or ``guarantee``),
    every queue shows guaranteed, borrowed and lent GPUs: one without a share is then
    guaranteed nothing, and all it holds is on loan, reclaimable."""
    ordered = sorted(
        (q for q in queues if q["metadata"]["name"] != ROOT_QUEUE),
        key=lambda q: q["metadata"]["name"],
    )
    shares = {q["metadata"]["name"]: QueueShare.of(q, gpu) for q in ordered}
    reserved = sum(s.reserved for s in shares.values())
    borrowed = {n: max(0, s.used - s.deserved) for n, s in shares.items()}
    # GPUs on loan come first from those no queue deserves, then from the idle shares of
    # lending queues, in name order (the cluster's size is known only for the VC view).
    excess = 0
    if cluster.gpu < vc_usage.UNLIMITED.gpu:
        unassigned = max(0, cluster.gpu - sum(s.deserved for s in shares.values()))
        excess = max(0, sum(borrowed.values()) - unassigned)
    lent = {}
    for n, s in shares.items():
        lent[n] = min(max(0, s.deserved - max(s.used, s.reserved)), excess)
        excess -= lent[n]
    out = []
    for q in ordered:
        name = q["metadata"]["name"]
        share = shares[name]
        cap = queue_capacity(q, cluster, gpu, reserved - share.reserved)
        used = vc_usage.resources((q.get("status") or {}).get("allocated"), gpu)
        state = (q.get("status") or {}).get("state") or "Open"
        vc = vc_usage.virtual_cluster(name, cap, used, jobs, f"Volcano queue {name} ({state})")
        if any(s.deserved for s in shares.values()):
            vc = vc.model_copy(
                update={
                    "guaranteed_gpus": share.deserved,
                    "borrowed_gpus": borrowed[name],
                    "lent_gpus": lent[name],
                    "may_borrow": cap.gpu > share.deserved,
                    "may_lend": share.deserved > share.reserved,
                }
            )
        out.append(vc)
    return out


def _when(event: Obj) -> str:
    return str(
        event.get("lastTimestamp")
        or event.get("eventTime")
        or (event.get("metadata") or {}).get("creationTimestamp")
        or ""
    )


def preemption_reason(
    job: JobProtocol, vc: str, events: Sequence[Obj], peers: Mapping[str, VirtualCluster]
) -> str | None:
    """Why a job waits again after running, when Volcano's ``reclaim`` evicted its pods
    (events ``Evict`` "…because of reclaim" on them, newer than any start): which VC took
    its GPUs back, and how many. None when it was not reclaimed."""
    evicted = [
        e for e in events if e.get("reason") == "Evict" and "reclaim" in str(e.get("message") or "")
    ]
    if not evicted:
        return None
    newest = max(_when(e) for e in evicted)
    started = [_when(e) for e in events if e.get("reason") in ("Started", "Scheduled")]
    if started and max(started) > newest:
        return None  # it ran again since
    pods = {
        (e.get("involvedObject") or {}).get("name")
        for e in evicted
        if (e.get("involvedObject") or {}).get("kind") == "Pod"
    }
    gpus = sum(_pod_gpus(job, str(p)) for p in pods)
    # The reclaimer: another VC with a share that holds no more than it (it may reclaim),
    # one with jobs placed first.
    takers = sorted(
        (v for n, v in peers.items() if n != vc and v.guaranteed_gpus),
        key=lambda v: (v.used.gpu == 0, v.name),
    )
    takers = [v for v in takers if v.used.gpu <= (v.guaranteed_gpus or 0)]
    who = f"VC {takers[0].name}" if takers else "another VC"
    what = f"{gpus} GPU{'s' if gpus != 1 else ''}" if gpus else "its GPUs"
    return f"preempted: {who} reclaimed {what}"


def _pod_gpus(job: JobProtocol, pod: str) -> int:
    """GPUs of one of the job's pods, by its name ``<job>-<role>-<index>``."""
    for role, spec in job.task_roles.items():
        if f"-{role.lower().replace('_', '-')}-" in pod:
            return spec.resource_per_instance.gpu
    return max((s.resource_per_instance.gpu for s in job.task_roles.values()), default=0)
