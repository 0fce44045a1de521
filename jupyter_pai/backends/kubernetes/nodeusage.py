"""The hardware view's nodes from Kubernetes objects: each node's allocatable GPUs, CPU
and memory against what the jobs' running pods on it request, and those jobs. Pure.

Only the pods this backend watches (its namespace's jobs) count as requests: a user
cannot list other namespaces' pods, so ``gpuUsed`` is what jupyter-pai's jobs here hold."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ..models import NodeResources
from . import quantities
from .naming import LABEL_JOB

Obj = dict[str, Any]


def requested_gpus(pod: Obj, gpu_resource: str) -> int:
    """The GPUs a pod's containers ask the device plugin for."""
    total = 0
    for c in (pod.get("spec") or {}).get("containers") or []:
        requests = (c.get("resources") or {}).get("requests") or {}
        limits = (c.get("resources") or {}).get("limits") or {}
        total += int(quantities.parse(limits.get(gpu_resource) or requests.get(gpu_resource)))
    return total


def node_resources(
    nodes: Iterable[Obj],
    pods: Iterable[Obj],
    job_ids: Mapping[str, str],
    gpu_resource: str,
    gpus_of: Callable[[Obj], int] | None = None,
) -> list[NodeResources]:
    """``job_ids``: a job's base name (the pods' job label) → its id. ``gpus_of``: the GPUs
    a pod holds (where the scheduler, not the device plugin, gives them); default: what
    its containers request."""
    out: dict[str, NodeResources] = {}
    for obj in nodes:
        name = obj["metadata"]["name"]
        alloc = (obj.get("status") or {}).get("allocatable") or {}
        gpus = int(quantities.parse(alloc.get(gpu_resource)))
        out[name] = NodeResources(
            name=name,
            gpu_total=gpus,
            gpu_free=gpus,
            cpu_allocatable=quantities.parse(alloc.get("cpu")),
            memory_mb_allocatable=quantities.mebibytes(alloc.get("memory")),
        )
    for pod in pods:
        node_name = (pod.get("spec") or {}).get("nodeName")
        phase = (pod.get("status") or {}).get("phase")
        if node_name not in out or phase not in ("Pending", "Running"):
            continue
        here = out[node_name]
        here.gpu_used += gpus_of(pod) if gpus_of else requested_gpus(pod, gpu_resource)
        for c in pod["spec"].get("containers") or []:
            requests = (c.get("resources") or {}).get("requests") or {}
            here.cpu_requested += quantities.parse(requests.get("cpu"))
            here.memory_mb_requested += quantities.mebibytes(requests.get("memory"))
        job = job_ids.get(((pod.get("metadata") or {}).get("labels") or {}).get(LABEL_JOB, ""))
        if job and job not in here.jobs:
            here.jobs.append(job)
    for node in out.values():
        node.gpu_free = max(0, node.gpu_total - node.gpu_used)
        node.cpu_requested = round(node.cpu_requested, 3)
    return [out[n] for n in sorted(out)]
