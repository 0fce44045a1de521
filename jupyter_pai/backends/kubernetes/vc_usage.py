"""Virtual clusters as the API reports them, whatever a flavor makes them of (its
``virtual_clusters`` hook reads the objects): capacity, use, and the jobs counted in each."""

from __future__ import annotations

from collections.abc import Iterable

from ..models import GpuTypeUsage, JobState, JobSummary, Resources, VirtualCluster
from . import quantities
from .states import Obj, VcUsage

GPU = "nvidia.com/gpu"
#: Stands for "no cap" where only caps matter (waiting reasons, submission checks).
UNLIMITED = Resources(gpu=10**9, cpu=1e12, memory_mb=10**12)


def resources(listing: dict[str, object] | None, gpu: str = GPU, prefix: str = "") -> Resources:
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


def virtual_cluster(
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


def usage(vc: VirtualCluster | None) -> VcUsage | None:
    if vc is None:
        return None
    capped = vc.capacity.gpu < UNLIMITED.gpu
    return VcUsage(vc.name, capacity=vc.capacity.gpu if capped else None, used=vc.used.gpu)


def cluster_total(nodes: list[Obj], gpu: str = GPU) -> Resources:
    total = Resources()
    for node in nodes:
        alloc = (node.get("status") or {}).get("allocatable") or {}
        r = resources(alloc, gpu)
        total = Resources(
            gpu=total.gpu + r.gpu, cpu=total.cpu + r.cpu, memory_mb=total.memory_mb + r.memory_mb
        )
    return total


def add_gpu_types(vcs: list[VirtualCluster], types: list[GpuTypeUsage]) -> None:
    """Every VC's GPU types where VCs are not tied to nodes (every flavor but hived): the
    cluster's, each VC's own quota still applying on top. A VC whose types the flavor
    listed (a quota per type) keeps them, each no larger nor freer than the cluster's."""
    cluster = {t.name: t for t in types}
    for vc in vcs:
        if not vc.gpu_types:
            vc.gpu_types = [t.model_copy() for t in types]
            continue
        for row in vc.gpu_types:
            found = cluster.get(row.name)
            if found is None:
                row.capacity = min(row.capacity, row.used)
                row.free = 0
                continue
            row.product = row.product or found.product
            row.capacity = min(row.capacity, found.capacity)
            row.free = max(0, min(row.free, found.free, row.capacity - row.used))
