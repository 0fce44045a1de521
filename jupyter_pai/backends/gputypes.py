"""GPU types: which kinds of GPU a cluster has (an H100 rather than a T4), read from its
Kubernetes Node objects or from HiveD's SKUs, each with a short name users choose by.

Pure: callers pass the Node dicts as the API server returns them (``GET /api/v1/nodes``),
or HiveD's configuration and VC status; nothing here does I/O.

On Kubernetes the names come from NVIDIA GPU Feature Discovery (GFD) labels:

* ``nvidia.com/gpu.product`` (``NVIDIA-H100-80GB-HBM3``, ``Tesla-T4``), ``nvidia.com/gpu.memory``
  (MiB), ``nvidia.com/gpu.count``, ``nvidia.com/gpu.family``;
* MIG, strategy ``single`` (``nvidia.com/mig.strategy=single``): every GPU is cut the same
  way and the product label names the profile (``NVIDIA-A100-SXM4-40GB-MIG-1g.5gb``); the
  pod still asks for ``nvidia.com/gpu``;
* MIG, strategy ``mixed``: each profile is its own extended resource in allocatable
  (``nvidia.com/mig-1g.5gb``), the product label names the whole GPU;
* shared GPUs (time-slicing, MPS): ``nvidia.com/gpu.replicas`` > 1,
  ``nvidia.com/gpu.sharing-strategy``, or the ``-SHARED`` suffix GFD adds to the product
  (``renameByDefault: false``); with ``renameByDefault: true`` the resource is
  ``nvidia.com/gpu.shared`` instead. A shared type's count is replicas, not GPUs.

A node with ``nvidia.com/gpu`` but no GFD labels has GPUs of type :data:`UNKNOWN`, which no
request for a named type lands on.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from ..spec.shortform import GPU_TYPE_PATTERN, check_gpu_type, parse_gpu_request

__all__ = [
    "GPU_RESOURCE",
    "GPU_TYPE_PATTERN",
    "HIVED_RESOURCE",
    "PRODUCT_LABEL",
    "SHARED_RESOURCE",
    "UNKNOWN",
    "GpuType",
    "GpuTypeCapacity",
    "canonical_name",
    "check_gpu_type",
    "cluster_gpu_types",
    "hived_gpu_types",
    "hived_vc_gpu_types",
    "node_gpu_types",
    "parse_gpu_request",
]

GPU_RESOURCE = "nvidia.com/gpu"
SHARED_RESOURCE = "nvidia.com/gpu.shared"
MIG_RESOURCE_PREFIX = "nvidia.com/mig-"
#: What a pod that HiveD places asks for (one per pod; the GPUs are in its scheduling spec).
HIVED_RESOURCE = "hivedscheduler.microsoft.com/pod-scheduling-enable"
PRODUCT_LABEL = "nvidia.com/gpu.product"
MEMORY_LABEL = "nvidia.com/gpu.memory"
COUNT_LABEL = "nvidia.com/gpu.count"
FAMILY_LABEL = "nvidia.com/gpu.family"
REPLICAS_LABEL = "nvidia.com/gpu.replicas"
SHARING_LABEL = "nvidia.com/gpu.sharing-strategy"
MIG_STRATEGY_LABEL = "nvidia.com/mig.strategy"
SHARED_SUFFIX = "-SHARED"
MIG_INFIX = "-MIG-"
#: The type of GPUs on a node without GFD labels: counted, never chosen by name.
UNKNOWN = "unknown"

#: Product-label words that name the vendor, brand, form factor or memory kind, not the
#: model (``NVIDIA-A100-SXM4-40GB`` and ``NVIDIA-A100-PCIE-40GB`` are both an A100-40GB).
_NOT_MODEL = frozenset(
    {"NVIDIA", "TESLA", "GEFORCE", "QUADRO", "SXM", "SXM2", "SXM3", "SXM4", "SXM5", "PCIE"}
    | {"HBM2", "HBM2E", "HBM3", "HBM3E", "GDDR6", "GDDR6X"}
)
_MEMORY_WORD = re.compile(r"^([0-9]+)GB$", re.IGNORECASE)
#: Memory sizes GPUs are sold with, in GB: what ``nvidia.com/gpu.memory`` is snapped to (a
#: T4 reports 15360 MiB, an H100 81559 MiB; they are sold as 16 GB and 80 GB).
_SOLD_GB = (2, 3, 4, 5, 6, 8, 10, 11, 12, 16, 20, 24, 32, 40, 48, 64, 80, 94, 96, 141, 180, 192)
_NAME_CHARS = re.compile(r"[^A-Za-z0-9._-]+")
_DASHES = re.compile(r"-{2,}")


@dataclass(frozen=True)
class GpuType:
    """One kind of GPU a pod can ask for.

    ``name``: the short name users choose by (see :func:`canonical_name`); ``product``: the
    full ``nvidia.com/gpu.product`` label (a HiveD SKU's name for a HiveD type);
    ``memory_mb``: ``nvidia.com/gpu.memory`` (for a MIG type the slice's), None where not
    known; ``mig_profile``: ``1g.5gb`` for a MIG slice; ``shared``: a time-sliced or MPS
    replica; ``resource``: the extended resource the pod asks for (``nvidia.com/gpu``,
    ``nvidia.com/mig-1g.5gb``, ``nvidia.com/gpu.shared``, or for a HiveD SKU
    :data:`HIVED_RESOURCE`); ``family``: ``nvidia.com/gpu.family`` (``hopper``);
    ``leaf_cell_type``: the HiveD leaf cell type (``leafCellType`` of the pod's scheduling
    spec) for a HiveD SKU, else None.
    """

    name: str
    product: str
    memory_mb: int | None
    mig_profile: str | None
    shared: bool
    resource: str
    family: str | None = None
    leaf_cell_type: str | None = None

    def selector(self) -> dict[str, str]:
        """The node labels that pin a pod to this type: ``nvidia.com/gpu.product``. Empty
        for :data:`UNKNOWN` (nothing to pin to) and for a HiveD SKU (HiveD picks the node
        from ``leaf_cell_type``). A mixed-MIG type is pinned too, although its resource
        alone finds a slice of that profile: H100s and A100-80GBs both have ``1g.10gb``."""
        if self.leaf_cell_type is not None or not self.product:
            return {}
        return {PRODUCT_LABEL: self.product}


@dataclass(frozen=True)
class GpuTypeCapacity:
    """A GPU type across the cluster: the ``nodes`` that have it and their allocatable
    ``capacity`` (replicas for a shared type, leaf cells for a HiveD SKU).

    ``variants``: every distinct :class:`GpuType` seen under the name, most nodes first.
    Usually one; an SXM4 and a PCIe A100-40GB are two (two products: pin a pod with
    :meth:`node_affinity_term`), and so are the same MIG profile on a ``single`` node
    (``nvidia.com/gpu``) and a ``mixed`` one (``nvidia.com/mig-1g.5gb``): a flavor that
    asks for a resource needs one placement per variant."""

    name: str
    product: str
    nodes: tuple[str, ...]
    capacity: int
    variants: tuple[GpuType, ...]

    @property
    def gpu_type(self) -> GpuType:
        return self.variants[0]

    @property
    def products(self) -> tuple[str, ...]:
        return tuple(sorted({v.product for v in self.variants if v.product}))

    @property
    def resources(self) -> tuple[str, ...]:
        return tuple(sorted({v.resource for v in self.variants}))

    def node_affinity_term(self) -> dict[str, Any] | None:
        """A ``nodeSelectorTerms`` match expression for every product of this name; None
        where nothing pins the type (unknown GPUs, HiveD SKUs)."""
        if not self.gpu_type.selector():
            return None
        return {"key": PRODUCT_LABEL, "operator": "In", "values": list(self.products)}


def canonical_name(
    product: str, memory_mb: int | None = None, *, shared: bool = False
) -> tuple[str, str | None, bool]:
    """``(name, mig_profile, shared)`` of a ``nvidia.com/gpu.product`` label.

    The name is ``<model>[-<memory>GB][-MIG-<profile>][-SHARED]``: the model is the
    product's words without vendor, brand, form-factor and memory-kind words (NVIDIA,
    Tesla, GeForce, Quadro, SXM4, PCIE, HBM3 …); the memory is the product's own ``80GB``
    word, else ``memory_mb`` (``nvidia.com/gpu.memory``) in GiB snapped to the nearest size
    GPUs are sold with. Pass ``memory_mb`` only for a whole, unshared GPU: a MIG slice's
    memory, or a replica's share of it, is not the model's. So ``NVIDIA-H100-80GB-HBM3`` is
    ``H100-80GB``, ``NVIDIA-A100-SXM4-40GB-MIG-1g.5gb`` is ``A100-40GB-MIG-1g.5gb``,
    ``Tesla-T4`` with 15360 MiB is ``T4-16GB`` and ``Tesla-T4-SHARED`` is ``T4-SHARED``.
    """
    base = product
    if base.endswith(SHARED_SUFFIX):
        base, shared = base[: -len(SHARED_SUFFIX)], True
    base, _, profile = base.partition(MIG_INFIX)
    words, memory_gb = [], None
    for word in base.split("-"):
        size = _MEMORY_WORD.match(word)
        if size:
            memory_gb = int(size.group(1))
        elif word and word.upper() not in _NOT_MODEL:
            words.append(word)
    model = "-".join(words) or base
    if memory_gb is None and memory_mb and not profile:
        memory_gb = _sold_size(memory_mb)
    name = model
    if memory_gb is not None:
        name += f"-{memory_gb}GB"
    if profile:
        name += f"{MIG_INFIX}{profile}"
    if shared:
        name += SHARED_SUFFIX
    return _label_value(name), profile or None, shared


def node_gpu_types(node: Mapping[str, Any]) -> list[tuple[GpuType, int]]:
    """The GPU types of one Node and the allocatable count of each (0 where GFD labels a
    GPU the device plugin does not offer yet); ``[]`` for a node without GPUs."""
    labels = _strings(_get(node, "metadata", "labels"))
    allocatable = _get(node, "status", "allocatable")
    allocatable = allocatable if isinstance(allocatable, Mapping) else {}
    product = labels.get(PRODUCT_LABEL, "")
    family = labels.get(FAMILY_LABEL) or None
    found: list[tuple[GpuType, int]] = []
    for resource, quantity in sorted(allocatable.items()):
        if not str(resource).startswith(MIG_RESOURCE_PREFIX):
            continue
        profile = str(resource)[len(MIG_RESOURCE_PREFIX) :]
        # In mixed mode the labels describe the whole GPU the slice is cut from.
        whole = canonical_name(product, _int(labels.get(MEMORY_LABEL)))[0] if product else UNKNOWN
        memory = _int(labels.get(f"{resource}.memory"))
        gpu_type = GpuType(
            name=_label_value(f"{whole}{MIG_INFIX}{profile}"),
            product=product,
            memory_mb=memory,
            mig_profile=profile,
            shared=False,
            resource=str(resource),
            family=family,
        )
        found.append((gpu_type, _int(quantity) or 0))
    for resource in (GPU_RESOURCE, SHARED_RESOURCE):
        count = _int(allocatable.get(resource)) or 0
        if count > 0:
            found.append((_whole_gpu(labels, resource, family), count))
    if not found and product:  # GFD has labelled it, the device plugin offers none yet
        found.append((_whole_gpu(labels, GPU_RESOURCE, family), 0))
    return found


def _whole_gpu(labels: Mapping[str, str], resource: str, family: str | None) -> GpuType:
    product = labels.get(PRODUCT_LABEL, "")
    memory = _int(labels.get(MEMORY_LABEL))
    if not product:
        return GpuType(UNKNOWN, "", memory, None, resource == SHARED_RESOURCE, resource)
    shared = (
        resource == SHARED_RESOURCE
        or (_int(labels.get(REPLICAS_LABEL)) or 1) > 1
        or labels.get(SHARING_LABEL, "none") not in ("", "none")
    )
    mig = MIG_INFIX in product
    name, profile, shared = canonical_name(
        product, None if shared or mig else memory, shared=shared
    )
    return GpuType(name, product, memory, profile, shared, resource, family)


def cluster_gpu_types(nodes: Iterable[Mapping[str, Any]]) -> list[GpuTypeCapacity]:
    """Every GPU type of the cluster, by name: its nodes and their allocatable total.
    Cordoned or tainted nodes count like the others: the caller leaves out what it would
    not schedule on."""
    nodes_of: dict[str, set[str]] = {}
    totals: dict[str, int] = {}
    variants: dict[str, dict[GpuType, int]] = {}
    for node in nodes:
        node_name = str(_get(node, "metadata", "name") or "")
        for gpu_type, count in node_gpu_types(node):
            nodes_of.setdefault(gpu_type.name, set()).add(node_name)
            totals[gpu_type.name] = totals.get(gpu_type.name, 0) + count
            seen = variants.setdefault(gpu_type.name, {})
            seen[gpu_type] = seen.get(gpu_type, 0) + 1
    out = []
    for name in sorted(nodes_of):
        ranked = sorted(variants[name].items(), key=lambda v: (-v[1], v[0].product, v[0].resource))
        kinds = tuple(v for v, _ in ranked)
        out.append(
            GpuTypeCapacity(
                name, kinds[0].product, tuple(sorted(nodes_of[name])), totals[name], kinds
            )
        )
    return out


# -- HiveD ------------------------------------------------------------------------------


def hived_gpu_types(
    sku_types: Mapping[str, Any] | None,
    vc_status: Mapping[str, Any] | None = None,
    *,
    cpu_skus: Iterable[str] = (),
) -> list[GpuTypeCapacity]:
    """HiveD's GPU SKUs as GPU types, named as they are (a job's ``skuType`` is HiveD's
    ``leafCellType``).

    ``sku_types``: HiveD's ``physicalCluster.skuTypes`` (``{sku: {gpu, cpu, memory}}``);
    a SKU with ``gpu: 0`` is a CPU SKU and left out, as are ``cpu_skus``. HiveD itself does
    not need ``skuTypes``, so the leaf cell types of ``vc_status`` count too, listed or
    not. ``vc_status``: HiveD's ``GET /v1/inspect/clusterstatus/virtualclusters``
    answer (VC → its cells); each SKU's capacity is its leaf cells in every VC, its nodes
    the node-level cells holding them (the physical node where HiveD says which). A SKU
    of ``skuTypes`` no VC has is listed with capacity 0."""
    cpu = set(cpu_skus)
    skus: set[str] = set()
    for sku, spec in (sku_types or {}).items():
        gpus = spec.get("gpu", 1) if isinstance(spec, Mapping) else 1
        if (_int(gpus) or 0) > 0:
            skus.add(str(sku))
        else:
            cpu.add(str(sku))
    cells: dict[str, int] = {}
    nodes: dict[str, set[str]] = {}
    for sku, node_address, leaves in _hived_nodes(vc_status or {}):
        if sku in cpu:
            continue
        skus.add(sku)
        cells[sku] = cells.get(sku, 0) + leaves
        nodes.setdefault(sku, set()).update([node_address] if node_address else [])
    out = []
    for sku in sorted(skus):
        gpu_type = GpuType(sku, sku, None, None, False, HIVED_RESOURCE, leaf_cell_type=sku)
        out.append(
            GpuTypeCapacity(
                sku, sku, tuple(sorted(nodes.get(sku, ()))), cells.get(sku, 0), (gpu_type,)
            )
        )
    return out


def hived_vc_gpu_types(
    vc_status: Mapping[str, Any], *, cpu_skus: Iterable[str] = ()
) -> dict[str, dict[str, int]]:
    """Leaf cells per VC and SKU (``{vc: {sku: cells}}``) from HiveD's VC status, without
    ``cpu_skus``; a VC without GPU cells maps to ``{}``."""
    cpu = set(cpu_skus)
    out: dict[str, dict[str, int]] = {}
    for vc, cells in vc_status.items():
        counts = out.setdefault(str(vc), {})
        for sku, _, leaves in _hived_nodes({vc: cells}):
            if sku not in cpu:
                counts[sku] = counts.get(sku, 0) + leaves
    return out


def _hived_nodes(vc_status: Mapping[str, Any]) -> Iterator[tuple[str, str, int]]:
    """(leaf cell type, node address, leaf cells) for each node-level cell of every VC; a
    cell above node level is walked down to them."""

    def walk(cell: Mapping[str, Any], sku: str) -> Iterator[tuple[str, str, int]]:
        sku = str(cell.get("leafCellType") or sku)
        if cell.get("isNodeLevel"):
            physical = cell.get("physicalCell")
            where = physical if isinstance(physical, Mapping) else cell
            yield sku, str(where.get("cellAddress", "")), sum(1 for _ in _leaves(cell))
            return
        children = cell.get("cellChildren") or []
        if not children:  # a leaf above node level: a VC of single cells
            yield sku, "", 1
        for child in children:
            if isinstance(child, Mapping):
                yield from walk(child, sku)

    for cells in vc_status.values():
        for cell in cells or []:
            if isinstance(cell, Mapping):
                yield from walk(cell, "")


def _leaves(cell: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    children = [c for c in cell.get("cellChildren") or [] if isinstance(c, Mapping)]
    if not children:
        yield cell
    for child in children:
        yield from _leaves(child)


# -- helpers ----------------------------------------------------------------------------


def _get(obj: Any, *keys: str) -> Any:
    for key in keys:
        obj = obj.get(key) if isinstance(obj, Mapping) else None
    return obj


def _strings(value: Any) -> dict[str, str]:
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, Mapping) else {}


def _int(value: Any) -> int | None:
    """A label or a plain quantity (``"8"``, ``8``) as an integer; None if it is not one."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    try:
        return int(str(value).strip())
    except ValueError:
        return None


def _sold_size(memory_mb: int) -> int:
    gib = memory_mb / 1024
    nearest = min(_SOLD_GB, key=lambda size: abs(size - gib))
    # Far from every size (a card we do not know): the GiB as they are.
    return nearest if abs(nearest - gib) <= 0.1 * nearest else math.floor(gib + 0.5)


def _label_value(name: str) -> str:
    """``name`` as a label value (what GPU_TYPE_PATTERN allows), so that flavors can put
    it in node selectors and resource flavor names."""
    cleaned = _DASHES.sub("-", _NAME_CHARS.sub("-", name)).strip("-._")[:63].rstrip("-._")
    return cleaned or UNKNOWN
