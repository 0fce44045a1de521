"""Placing a role on its GPU type (``extras.hivedScheduler.taskRoles.<role>.skuType``) on
the flavors that ask kube-scheduler, Volcano or Kueue for nodes (every flavor but hived,
where HiveD's SKU is the type): the type is looked up among the cluster's, read from its
Node objects (:func:`..gputypes.cluster_gpu_types`); its pods get a node affinity to the
type's products and ask for the type's resource (:func:`place`, called by the shared pod
builder). The same node read counts each type's GPUs for the VC view and the waiting
reasons.

Pure except :class:`ClusterGpuTypes`, which reads the nodes through the backend's REST
client and keeps the answer for ``ttl`` seconds."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ...errors import FieldError, SpecError
from ...spec.protocol import JobProtocol
from ..gputypes import GPU_RESOURCE, PRODUCT_LABEL, UNKNOWN, GpuTypeCapacity, cluster_gpu_types
from ..models import GpuTypeUsage
from . import quantities
from .promql import Cached
from .resources import NODE
from .rest import ApiError, Rest, path, typed

Manifest = dict[str, Any]
#: Seconds the nodes' GPU types are reused: nodes come and go rarely, a submission or a
#: VC view refresh should not cost a LIST of every node.
NODES_TTL = 30.0
#: A type not found in an answer older than this is looked for again (a node just added).
RECHECK_AFTER = 2.0
_ENDED = ("Succeeded", "Failed")


def sku_field(role: str) -> str:
    return f"extras.hivedScheduler.taskRoles.{role}.skuType"


def typed_roles(job: JobProtocol) -> dict[str, str]:
    """Role → the GPU type it names, for the roles that ask for GPUs."""
    out = {}
    for role, spec in job.task_roles.items():
        name = job.gpu_type(role)
        if name and spec.resource_per_instance.gpu > 0:
            out[role] = name
    return out


def choosable(types: Iterable[GpuTypeCapacity]) -> dict[str, GpuTypeCapacity]:
    """The types a job may name: those a node affinity can pin (not :data:`UNKNOWN`)."""
    return {t.name: t for t in types if t.name != UNKNOWN and t.node_affinity_term() is not None}


def unknown_type(role: str, name: str, types: Mapping[str, GpuTypeCapacity]) -> FieldError:
    have = ", ".join(f"{t.name} ({t.capacity} GPUs)" for t in types.values()) or "none"
    return FieldError(
        sku_field(role), f"the cluster has no GPU type {name!r}; its GPU types: {have}"
    )


def resolve(job: JobProtocol, types: Iterable[GpuTypeCapacity]) -> dict[str, GpuTypeCapacity]:
    """The cluster's type of every typed role; a :class:`SpecError` naming each role whose
    type the cluster does not have, with the types it has."""
    known = choosable(types)
    errors = [unknown_type(r, n, known) for r, n in typed_roles(job).items() if n not in known]
    if errors:
        raise SpecError(errors)
    return {role: known[name] for role, name in typed_roles(job).items()}


def place(
    pod_spec: Manifest,
    resources: Manifest,
    capacity: GpuTypeCapacity,
    gpus: int,
    gpu_resource: str = GPU_RESOURCE,
) -> None:
    """Pin a pod (its ``spec``, its main container's ``resources``) to ``capacity``'s
    nodes: a required node affinity to the products of the variants offering the most
    common variant's resource (ANDed with the pod's ``nodeSelector``), and that resource
    (``nvidia.com/mig-1g.5gb`` for a mixed-MIG type; a whole GPU stays ``gpu_resource``)."""
    raw = capacity.gpu_type.resource
    resource = gpu_resource if raw == GPU_RESOURCE else raw
    for part in ("requests", "limits"):
        resources[part].pop(gpu_resource, None)
        resources[part][resource] = str(gpus)
    products = sorted({v.product for v in capacity.variants if v.product and v.resource == raw})
    term = {"key": PRODUCT_LABEL, "operator": "In", "values": products}
    pod_spec["affinity"] = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [term]}]
            }
        }
    }


# -- what each type holds ------------------------------------------------------------------


def pod_requests(pod: Manifest) -> dict[str, int]:
    total: dict[str, int] = {}
    for c in (pod.get("spec") or {}).get("containers") or []:
        res = c.get("resources") or {}
        for resource, value in {**(res.get("requests") or {}), **(res.get("limits") or {})}.items():
            if str(resource).startswith("nvidia.com/"):
                total[resource] = int(quantities.parse(value))
    return total


def usage(
    types: Iterable[GpuTypeCapacity], pods: Iterable[Manifest], gpu_resource: str = GPU_RESOURCE
) -> list[GpuTypeUsage]:
    """Each type's capacity, and the GPUs ``pods`` (those not ended) hold on its nodes in
    its resources."""
    types = list(types)
    used = dict.fromkeys((t.name for t in types), 0)
    node_types: dict[str, list[GpuTypeCapacity]] = {}
    for t in types:
        for node in t.nodes:
            node_types.setdefault(node, []).append(t)
    for pod in pods:
        if (pod.get("status") or {}).get("phase") in _ENDED:
            continue
        on = str((pod.get("spec") or {}).get("nodeName") or "")
        asked = pod_requests(pod)
        for t in node_types.get(on, []):
            wanted = {gpu_resource if r == GPU_RESOURCE else r for r in t.resources}
            used[t.name] += sum(n for r, n in asked.items() if r in wanted)
    return [
        GpuTypeUsage(
            name=t.name,
            product=t.product or None,
            capacity=t.capacity,
            used=min(used[t.name], t.capacity),
            free=max(0, t.capacity - used[t.name]),
        )
        for t in types
    ]


def waiting_for(job: JobProtocol, vc: str, found: Mapping[str, GpuTypeUsage]) -> str | None:
    """ "waiting for 2 A100-40GB in VC research: 0 of 16 free", per type the job names;
    None where it names none (or none is known)."""
    need: dict[str, int] = {}
    for role, name in typed_roles(job).items():
        spec = job.task_roles[role]
        need[name] = need.get(name, 0) + spec.instances * spec.resource_per_instance.gpu
    parts = [
        f"{n} {name} in VC {vc}: {found[name].free} of {found[name].capacity} free"
        for name, n in need.items()
        if name in found
    ]
    return "waiting for " + "; ".join(parts) if parts else None


#: Reasons about nodes (not the VC's quota), which a typed job's reason replaces.
NODE_REASONS = ("no node has", "waiting for the scheduler", "Unschedulable", "FailedScheduling")


def typed_reason(
    job: JobProtocol, reason: str, found: Callable[[], Mapping[str, GpuTypeUsage]] | None
) -> str:
    """``reason`` as the type's, where it is about nodes and the job names a type."""
    if found is None or not typed_roles(job) or not reason.startswith(NODE_REASONS):
        return reason
    return waiting_for(job, job.virtual_cluster, found()) or reason


class ClusterGpuTypes:
    """The cluster's nodes and their GPU types, re-read at most every ``ttl`` seconds."""

    def __init__(self, rest: Callable[[], Rest], ttl: float = NODES_TTL) -> None:
        self._rest = rest
        self._cache: Cached[tuple[float, list[Manifest]]] = Cached(self._read, ttl)
        #: The last answer, for the synchronous readers (waiting reasons).
        self.last: list[GpuTypeCapacity] | None = None

    async def _read(self) -> tuple[float, list[Manifest]]:
        try:
            nodes = await self._rest().get(path(NODE, None))
        except ApiError as error:  # e.g. 403 without the cluster reader's node LIST
            raise typed(error) from None
        return time.monotonic(), list(nodes.get("items") or [])

    async def nodes(self) -> list[Manifest]:
        """The cluster's Node objects, as last read."""
        _, nodes = await self._cache.get()
        return nodes

    async def types(self) -> list[GpuTypeCapacity]:
        nodes = await self.nodes()
        self.last = cluster_gpu_types(nodes)
        return self.last

    async def for_job(self, job: JobProtocol) -> dict[str, GpuTypeCapacity]:
        """Every typed role's type (:func:`resolve`); a type the last answer lacks is looked
        for again in a fresh one unless that answer is only seconds old."""
        types = await self.types()
        missing = set(typed_roles(job).values()) - set(choosable(types))
        read_at, _ = await self._cache.get()
        if missing and time.monotonic() - read_at > RECHECK_AFTER:
            self._cache.forget()
            types = await self.types()
        return resolve(job, types)
