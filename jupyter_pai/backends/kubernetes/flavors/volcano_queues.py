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

:func:`queue_manifest` writes such a queue; :func:`queue_virtual_clusters` reads any.

A VC split by GPU type is a queue per type (:func:`type_queue_name`), each labelled with its
VC and type, each with that type's share: Volcano's quotas are per resource, not per node
label, so a type's quota is a queue of its own, and a typed job goes into its type's queue
(its pods' node affinity keeps them on that type's nodes). Such a VC is listed once, its
types as rows."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ....spec.protocol import JobProtocol
from ...models import GpuTypeUsage, JobSummary, Resources, VirtualCluster
from .. import vc_usage
from ..naming import LABEL_VC
from ..pods import Manifest
from ..resources import Kind
from ..states import Obj

VOLCANO_QUEUE = Kind("scheduling.volcano.sh/v1beta1", "Queue", "queues", namespaced=False)

#: The parent of every queue, added by vc-controller-manager; Volcano refuses jobs in it.
ROOT_QUEUE = "root"
#: On a queue holding one GPU type's share of a VC (with :data:`LABEL_VC` naming the VC).
LABEL_GPU_TYPE = "jupyter-pai.io/gpu-type"


def type_queue_name(vc: str, gpu_type: str) -> str:
    """The queue of ``vc``'s share of ``gpu_type`` (as the chart names it: a queue's name
    is a lower-case DNS subdomain, which the VC and type names are but for case)."""
    return f"{vc}-{gpu_type}".lower()


def queue_manifest(
    name: str,
    share: int,
    *,
    borrow: bool = True,
    lend: bool = True,
    gpu: str = vc_usage.GPU,
    gpu_type: str | None = None,
) -> Manifest:
    """The Volcano Queue of a virtual cluster guaranteed ``share`` GPUs that may borrow
    other VCs' idle GPUs and may lend its own (see the module docstring); with
    ``gpu_type``, VC ``name``'s share of that type, named :func:`type_queue_name`."""
    gpus = {gpu: str(share)}
    spec: dict[str, Any] = {"reclaimable": True, "weight": 1, "deserved": dict(gpus)}
    if not lend:
        spec["guarantee"] = {"resource": dict(gpus)}
    if not borrow:
        spec["capability"] = dict(gpus)
    metadata: dict[str, Any] = {"name": name}
    if gpu_type is not None:
        metadata = {
            "name": type_queue_name(name, gpu_type),
            "labels": {LABEL_VC: name, LABEL_GPU_TYPE: gpu_type},
        }
    return {
        "apiVersion": VOLCANO_QUEUE.api_version,
        "kind": "Queue",
        "metadata": metadata,
        "spec": spec,
    }


def type_queues(queues: list[Obj]) -> dict[str, dict[str, str]]:
    """VC → GPU type → its queue, for the VCs split by type."""
    out: dict[str, dict[str, str]] = {}
    for q in queues:
        labels = q["metadata"].get("labels") or {}
        vc, gpu_type = labels.get(LABEL_VC), labels.get(LABEL_GPU_TYPE)
        if vc and gpu_type:
            out.setdefault(str(vc), {})[str(gpu_type)] = str(q["metadata"]["name"])
    return out


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
    return _merge_type_queues(out, type_queues(ordered), jobs)


def _merge_type_queues(
    vcs: list[VirtualCluster], split: dict[str, dict[str, str]], jobs: list[JobSummary]
) -> list[VirtualCluster]:
    """Each VC split by type as one row summing its type queues, a type per queue."""
    by_name = {v.name: v for v in vcs}
    queue_vc = {queue: vc for vc, types in split.items() for queue in types.values()}
    out = [v for v in vcs if v.name not in queue_vc]
    for vc, types in sorted(split.items()):
        parts = {t: by_name[q] for t, q in sorted(types.items()) if q in by_name}
        rows = list(parts.values())
        if not rows:
            continue
        capacity = _sum(r.capacity for r in rows)
        used = _sum(r.used for r in rows)
        counted = vc_usage.virtual_cluster(vc, capacity, used, jobs, "")
        merged = counted.model_copy(
            update={
                "description": f"Volcano queues {', '.join(sorted(types.values()))}, one per GPU type",
                "guaranteed_gpus": _total(r.guaranteed_gpus for r in rows),
                "borrowed_gpus": _total(r.borrowed_gpus for r in rows),
                "lent_gpus": _total(r.lent_gpus for r in rows),
                "may_borrow": any(r.may_borrow for r in rows),
                "may_lend": any(r.may_lend for r in rows),
                "gpu_types": [
                    GpuTypeUsage(
                        name=t,
                        capacity=r.capacity.gpu,
                        used=r.used.gpu,
                        free=max(0, r.capacity.gpu - r.used.gpu),
                    )
                    for t, r in parts.items()
                ],
            }
        )
        out.append(merged)
    return sorted(out, key=lambda v: v.name)


def _sum(parts: Any) -> Resources:
    """GPUs summed (unlimited if any is); CPU and memory are not split by type: the most."""
    rows = list(parts)
    gpus = sum(r.gpu for r in rows)
    return Resources(
        gpu=min(gpus, vc_usage.UNLIMITED.gpu),
        cpu=max((r.cpu for r in rows), default=0),
        memory_mb=max((r.memory_mb for r in rows), default=0),
    )


def _total(values: Any) -> int | None:
    found = [v for v in values if v is not None]
    return sum(found) if found else None


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
