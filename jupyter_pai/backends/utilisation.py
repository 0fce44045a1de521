"""GPU utilisation of a job's tasks from per-GPU readings, whatever measured them (NVML
on this machine, a Prometheus server's DCGM series on Kubernetes). Pure.

A task's or a job's utilisation is the mean over its GPUs, its memory the sum; a GPU
nothing measured counts for neither (``None`` stays ``None``, never 0)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from statistics import fmean

from .models import GpuUsage, JobDetail, JobUtilisation, TaskState, TaskUtilisation


@dataclass(frozen=True)
class GpuReading:
    """One GPU: now, and over the last hour (mean utilisation, peak memory)."""

    percent: float | None = None
    memory_mb: float | None = None
    hour_percent: float | None = None
    hour_memory_mb: float | None = None


def _mean(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return round(fmean(known), 1) if known else None


def _sum(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return round(sum(known), 1) if known else None


def usage(readings: Sequence[GpuReading], *, hour: bool = False) -> GpuUsage | None:
    if hour:
        found = GpuUsage(
            gpu_percent=_mean([r.hour_percent for r in readings]),
            memory_mb=_sum([r.hour_memory_mb for r in readings]),
        )
    else:
        found = GpuUsage(
            gpu_percent=_mean([r.percent for r in readings]),
            memory_mb=_sum([r.memory_mb for r in readings]),
        )
    return None if found.gpu_percent is None and found.memory_mb is None else found


def job_utilisation(
    job: JobDetail,
    readings: Mapping[tuple[str, int], Sequence[GpuReading]],
    *,
    source: str | None,
    note: str | None = None,
) -> JobUtilisation:
    """``readings``: (role, index) → that task's GPUs. Only running tasks are measured."""
    tasks = []
    every: list[GpuReading] = []
    for t in job.tasks:
        mine = list(readings.get((t.role, t.index), [])) if t.state == TaskState.RUNNING else []
        every += mine
        tasks.append(
            TaskUtilisation(
                role=t.role,
                index=t.index,
                gpu_number=t.gpu_number,
                current=usage(mine),
                last_hour=usage(mine, hour=True),
            )
        )
    return JobUtilisation(
        job_id=job.id,
        source=source,
        current=usage(every),
        last_hour=usage(every, hour=True),
        tasks=tasks,
        note=note,
    )
