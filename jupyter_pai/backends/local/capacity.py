"""What this machine offers and what jobs hold of it: the virtual clusters' view (GPU
slots by each VC's policy, CPU and memory of the machine) and the one node's view."""

from __future__ import annotations

import contextlib
import os
import socket
from collections.abc import Mapping

from ...spec.protocol import JobProtocol
from ..models import JobState, NodeResources, Resources, VirtualCluster
from .records import JobRecord
from .scheduler import VcPolicy, vc_usage

HOLDING = (JobState.RUNNING, JobState.STOPPING)


def virtual_clusters(
    records: list[JobRecord], slots: int, policies: Mapping[str, VcPolicy]
) -> list[VirtualCluster]:
    cpus = float(os.cpu_count() or 1)
    memory = memory_mb()
    usage = vc_usage(records, slots, policies)
    result = []
    for name, policy in policies.items():
        mine = [r for r in records if r.virtual_cluster == name]
        running = [r for r in mine if r.state in HOLDING]
        queued = [r for r in mine if r.state == JobState.WAITING]
        gpus = usage[name]
        used = Resources(
            gpu=gpus.used,
            cpu=sum(r.total_cpu for r in running),
            memory_mb=sum(r.total_memory_mb for r in running),
        )
        result.append(
            VirtualCluster(
                name=name,
                capacity=Resources(gpu=gpus.limit, cpu=cpus, memory_mb=memory),
                used=used,
                free=Resources(
                    gpu=gpus.free,
                    cpu=max(0.0, cpus - used.cpu),
                    memory_mb=max(0, memory - used.memory_mb),
                ),
                running_jobs=len(running),
                queued_jobs=len(queued),
                queued=Resources(
                    gpu=sum(r.total_gpus for r in queued),
                    cpu=sum(r.total_cpu for r in queued),
                    memory_mb=sum(r.total_memory_mb for r in queued),
                ),
                guaranteed_gpus=gpus.guaranteed,
                borrowed_gpus=gpus.borrowed,
                lent_gpus=gpus.lent,
                may_borrow=policy.borrow,
                may_lend=policy.lend,
                description=describe(name, slots, policies),
            )
        )
    return result


def describe(name: str, slots: int, policies: Mapping[str, VcPolicy]) -> str:
    policy = policies[name]
    text = f"{policy.guaranteed} of this machine's {slots} GPU slots"
    if len(policies) == 1 and not policy.borrow:
        return text
    text += " guaranteed"
    if policy.borrow:
        text += "; borrows idle GPUs of other VCs (jobs on them may be preempted)"
    if not policy.lend:
        text += "; lends none"
    return text


def this_node(
    holding: list[JobRecord],
    specs: Mapping[str, JobProtocol],
    slots: int,
    *,
    cpu_percent: float | None,
    memory_percent: float | None,
    gpu_percents: list[float],
) -> NodeResources:
    """The machine with what ``holding`` (the jobs holding resources) requested of it."""
    cpu = memory = 0.0
    for r in holding:
        for t in r.tasks:
            if not t.state.terminal:  # held from admission, as its GPUs are
                res = specs[r.id].task_roles[t.role].resource_per_instance
                cpu += res.cpu
                memory += res.memory_mb
    used = sum(len(r.allocated_gpus) for r in holding)
    return NodeResources(
        name=socket.gethostname(),
        gpu_total=slots,
        gpu_used=used,
        gpu_free=max(0, slots - used),
        cpu_allocatable=float(os.cpu_count() or 1),
        cpu_requested=round(cpu, 3),
        memory_mb_allocatable=memory_mb(),
        memory_mb_requested=int(memory),
        jobs=sorted(r.id for r in holding),
        cpu_percent=cpu_percent,
        memory_percent=memory_percent,
        # Simulated slots have nothing to measure: no figure, not 0 %.
        gpu_percent=round(sum(gpu_percents) / len(gpu_percents), 1) if gpu_percents else None,
    )


def memory_mb() -> int:
    with contextlib.suppress(OSError, ValueError, AttributeError):
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / (1024 * 1024))
    return 0
