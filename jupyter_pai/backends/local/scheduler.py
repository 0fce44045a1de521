"""Gang admission for local GPU slots: FIFO per virtual cluster, all of a job or nothing.

Pure: given the active jobs (oldest first), the slots and each VC's quota, say which jobs
start with which GPUs and why the others wait. The backend applies the plan under its lock.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ..models import JobState
from .records import JobRecord


@dataclass(frozen=True)
class Demand:
    """GPUs each task of a job needs, in task order (role-index keys)."""

    job: JobRecord
    per_task: Mapping[str, int]

    @property
    def total(self) -> int:
        return sum(self.per_task.values())


@dataclass
class Plan:
    start: dict[str, dict[str, list[str]]] = field(default_factory=dict)  # job id → task → GPUs
    waiting: dict[str, str] = field(default_factory=dict)  # job id → reason


def vc_capacities(shares: Mapping[str, object], slots: int) -> dict[str, int]:
    """``{name: share}`` → GPUs per VC. A share is a GPU count (``2``), a fraction (``0.5``)
    or a percentage (``"50%"``) of the slots. Fractions round down; when the shares cover the
    whole machine, what rounding left over goes to the first VC so no slot sits unused."""
    exact: dict[str, float] = {}
    for name, share in shares.items():
        if isinstance(share, str) and share.strip().endswith("%") and _percent(share) >= 0:
            exact[name] = slots * _percent(share) / 100
        elif isinstance(share, float) and 0 < share <= 1:
            exact[name] = slots * share
        elif isinstance(share, (int, float)) and share >= 0:
            exact[name] = float(int(share))
        else:
            raise ValueError(
                f"virtual cluster {name!r}: share {share!r} is not a GPU count, a fraction or a percentage"
            )
    caps = {name: math.floor(v + 1e-9) for name, v in exact.items()}
    total = sum(caps.values())
    asked = sum(exact.values())
    if asked > slots + 1e-9:  # judged before rounding down: 80% + 30% is too much
        raise ValueError(
            f"virtual clusters ask for {asked:g} GPUs but this machine offers {slots}: "
            "lower LocalBackend.virtual_clusters_config"
        )
    if caps and math.isclose(sum(exact.values()), slots):
        caps[next(iter(caps))] += slots - total
    return caps


def _percent(share: str) -> float:
    """``"50%"`` → 50.0; -1 for text that is not a percentage."""
    try:
        return float(share.strip()[:-1])
    except ValueError:
        return -1


def plan(demands: Sequence[Demand], slots: Sequence[str], capacities: Mapping[str, int]) -> Plan:
    result = Plan()
    held = {g for d in demands for g in d.job.allocated_gpus}
    free = [s for s in slots if s not in held]
    used: dict[str, int] = {}
    for d in demands:
        if d.job.state in (JobState.RUNNING, JobState.STOPPING):
            used[d.job.virtual_cluster] = used.get(d.job.virtual_cluster, 0) + len(
                d.job.allocated_gpus
            )
    blocked: dict[str, str] = {}  # vc → id of the job at the head of its queue
    for d in demands:
        job = d.job
        if job.state != JobState.WAITING or job.stop_requested:
            continue
        vc = job.virtual_cluster
        if vc not in capacities:
            result.waiting[job.id] = f"virtual cluster {vc} does not exist on this machine"
            continue
        need = d.total
        vc_free = capacities[vc] - used.get(vc, 0)
        if need == 0:  # a CPU-only job holds no slot, so it never waits for GPUs
            result.start[job.id] = {task: [] for task in d.per_task}
            continue
        available = min(vc_free, len(free))
        if vc in blocked:
            result.waiting[job.id] = (
                f"queued behind {blocked[vc]} in VC {vc} (needs {need} GPUs, {max(available, 0)} free)"
            )
            continue
        if need > capacities[vc]:
            result.waiting[job.id] = (
                f"needs {need} GPUs but VC {vc} has only {capacities[vc]} in total"
            )
            blocked[vc] = job.id
            continue
        if need > available:
            result.waiting[job.id] = f"waiting for {need} GPUs in VC {vc}, {max(available, 0)} free"
            blocked[vc] = job.id
            continue
        grant: dict[str, list[str]] = {}
        for task, count in d.per_task.items():
            grant[task], free = free[:count], free[count:]
        used[vc] = used.get(vc, 0) + need
        result.start[job.id] = grant
    return result
