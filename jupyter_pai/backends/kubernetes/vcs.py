"""Virtual clusters: Volcano queues (capability / deserved / guarantee), or on the native
flavour PriorityClasses ``vc-<name>`` capped by ResourceQuotas."""

from __future__ import annotations

from collections.abc import Iterable

from ..models import JobState, JobSummary, Resources, VirtualCluster
from . import quantities
from .rest import Obj
from .states import VcUsage

GPU = "nvidia.com/gpu"
#: Stands for "no cap" where only caps matter (waiting reasons, submission checks).
UNLIMITED = Resources(gpu=10**9, cpu=1e12, memory_mb=10**12)


def _resources(listing: dict[str, object] | None, gpu: str = GPU, prefix: str = "") -> Resources:
    listing = listing or {}
    return Resources(
        gpu=int(quantities.parse(listing.get(prefix + gpu))),
        cpu=quantities.parse(listing.get(prefix + "cpu")),
        memory_mb=quantities.mebibytes(listing.get(prefix + "memory")),
    )


def _free(cap: Resources, used: Resources) -> Resources:
    return Resources(
        gpu=max(0, cap.gpu - used.gpu),
        cpu=max(0.0, cap.cpu - used.cpu),
        memory_mb=max(0, cap.memory_mb - used.memory_mb),
    )


def _virtual_cluster(
    name: str, cap: Resources, used: Resources, jobs: Iterable[JobSummary], description: str
) -> VirtualCluster:
    """A VC from its capacity and use, with the running and waiting jobs counted from ``jobs``."""
    mine = [j for j in jobs if j.virtual_cluster == name]
    waiting = [j for j in mine if j.state == JobState.WAITING]
    running = [j for j in mine if j.state in (JobState.RUNNING, JobState.STOPPING)]
    return VirtualCluster(
        name=name,
        capacity=cap,
        used=used,
        free=_free(cap, used),
        running_jobs=len(running),
        queued_jobs=len(waiting),
        queued=Resources(gpu=sum(j.total_gpu_number for j in waiting)),
        description=description,
    )


def volcano_queue_capacity(queue: Obj, cluster: Resources, gpu: str = GPU) -> Resources:
    """capability, else deserved, else guarantee, else the whole cluster."""
    spec = queue.get("spec") or {}
    for listing in (
        spec.get("capability"),
        spec.get("deserved"),
        (spec.get("guarantee") or {}).get("resource"),
    ):
        if listing:
            r = _resources(listing, gpu)
            return Resources(
                gpu=r.gpu if gpu in listing else cluster.gpu,
                cpu=r.cpu if "cpu" in listing else cluster.cpu,
                memory_mb=r.memory_mb if "memory" in listing else cluster.memory_mb,
            )
    return cluster


def volcano(
    queues: list[Obj], jobs: list[JobSummary], cluster: Resources, gpu: str = GPU
) -> list[VirtualCluster]:
    out = []
    for q in sorted(queues, key=lambda q: q["metadata"]["name"]):
        name = q["metadata"]["name"]
        cap = volcano_queue_capacity(q, cluster, gpu)
        used = _resources((q.get("status") or {}).get("allocated"), gpu)
        state = (q.get("status") or {}).get("state") or "Open"
        out.append(_virtual_cluster(name, cap, used, jobs, f"Volcano queue {name} ({state})"))
    return out


def native(
    priority_classes: list[Obj],
    quotas: list[Obj],
    jobs: list[JobSummary],
    cluster: Resources,
    prefix: str,
    gpu: str = GPU,
) -> list[VirtualCluster]:
    out = []
    for pc in sorted(priority_classes, key=lambda p: p["metadata"]["name"]):
        pc_name = pc["metadata"]["name"]
        if not pc_name.startswith(prefix):
            continue
        name = pc_name[len(prefix) :]
        quota = next((q for q in quotas if _quota_scope(q) == pc_name), None)
        if quota is not None:
            hard = _resources(
                (quota.get("status") or {}).get("hard") or quota["spec"].get("hard"),
                gpu,
                "requests.",
            )
            used = _resources((quota.get("status") or {}).get("used"), gpu, "requests.")
            cap = Resources(
                gpu=hard.gpu,
                cpu=hard.cpu or cluster.cpu,
                memory_mb=hard.memory_mb or cluster.memory_mb,
            )
        else:
            cap = cluster
            used = Resources(
                gpu=sum(
                    j.total_gpu_number
                    for j in jobs
                    if j.virtual_cluster == name and j.state == JobState.RUNNING
                )
            )
        description = str(pc.get("description") or f"priority class {pc_name}")
        out.append(_virtual_cluster(name, cap, used, jobs, description))
    return out


def _quota_scope(quota: Obj) -> str | None:
    for expr in ((quota.get("spec") or {}).get("scopeSelector") or {}).get(
        "matchExpressions"
    ) or []:
        if expr.get("scopeName") == "PriorityClass" and expr.get("operator") == "In":
            values = expr.get("values") or []
            return str(values[0]) if values else None
    return None


def usage(vc: VirtualCluster | None) -> VcUsage | None:
    if vc is None:
        return None
    capped = vc.capacity.gpu < UNLIMITED.gpu
    return VcUsage(vc.name, capacity=vc.capacity.gpu if capped else None, used=vc.used.gpu)


def cluster_total(nodes: list[Obj], gpu: str = GPU) -> Resources:
    total = Resources()
    for node in nodes:
        alloc = (node.get("status") or {}).get("allocatable") or {}
        r = _resources(alloc, gpu)
        total = Resources(
            gpu=total.gpu + r.gpu, cpu=total.cpu + r.cpu, memory_mb=total.memory_mb + r.memory_mb
        )
    return total
