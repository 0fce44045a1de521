"""HiveD's virtual clusters, read from its web server: HiveD keeps them in its own
configuration and memory, not in the API server, so the hived flavor asks
``GET <hived>/v1/inspect/clusterstatus/virtualclusters`` (every VC's cells, each leaf cell
a GPU of the VC's SKU, ``Free`` or bound to a pod) and turns the answer into VC rows.

:func:`vc_cells` is pure (the unit tests feed it HiveD's answers); :class:`HivedCells`
fetches and caches them, so a panel of many viewers costs HiveD one request per
``ttl``."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import aiohttp

from ....errors import Unavailable
from ...gputypes import hived_vc_gpu_types
from ...models import GpuTypeUsage, JobSummary, Resources, VirtualCluster
from .. import vc_usage
from ..promql import Cached

STATUS_PATH = "/v1/inspect/clusterstatus/virtualclusters"
# A leaf cell in any other state is held by (or promised to) a pod.
_FREE = "Free"


@dataclass(frozen=True)
class VcCells:
    """One virtual cluster's leaf cells as HiveD counts them: GPUs, and the cells of the
    CPU SKU (one CPU each) where the VC has some."""

    name: str
    leaf_cell_types: tuple[str, ...]
    total: int
    used: int
    bad: int  # leaf cells HiveD marks unhealthy: still the VC's, not usable now
    cpus: int = 0
    cpus_used: int = 0
    #: (SKU, leaf cells, in use) per GPU SKU: the VC's GPU types
    by_type: tuple[tuple[str, int, int], ...] = ()

    def gpu_types(self) -> list[GpuTypeUsage]:
        return [
            GpuTypeUsage(name=sku, product=sku, capacity=n, used=u, free=max(0, n - u))
            for sku, n, u in self.by_type
        ]


def _leaves(cell: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    children = cell.get("cellChildren") or []
    if not children:
        yield cell
    for child in children:
        yield from _leaves(child)


def _in_use(leaves: list[Mapping[str, Any]]) -> int:
    return sum(1 for leaf in leaves if leaf.get("cellState", _FREE) != _FREE)


def _sku_leaves(cells: list[Mapping[str, Any]], sku: str) -> list[Mapping[str, Any]]:
    return [leaf for c in cells if c.get("leafCellType") == sku for leaf in _leaves(c)]


def vc_cells(status: Mapping[str, Any], cpu_sku: str = "") -> dict[str, VcCells]:
    """HiveD's virtual cluster status (VC name → its top cells) as counts per VC; cells
    whose leaf type is ``cpu_sku`` count as CPUs, the others as GPUs."""
    out = {}
    cells_of = hived_vc_gpu_types(status, cpu_skus=[cpu_sku] if cpu_sku else [])
    for name, cells in status.items():
        gpu = [leaf for c in cells or [] if c.get("leafCellType") != cpu_sku for leaf in _leaves(c)]
        cpu = [
            leaf
            for c in cells or []
            if cpu_sku and c.get("leafCellType") == cpu_sku
            for leaf in _leaves(c)
        ]
        types = {str(c["leafCellType"]) for c in cells or [] if c.get("leafCellType")}
        out[str(name)] = VcCells(
            name=str(name),
            leaf_cell_types=tuple(sorted(types - {cpu_sku})),
            total=len(gpu),
            used=_in_use(gpu),
            bad=sum(1 for leaf in gpu if leaf.get("cellHealthiness", "Healthy") != "Healthy"),
            cpus=len(cpu),
            cpus_used=_in_use(cpu),
            by_type=tuple(
                (sku, n, _in_use(_sku_leaves(cells or [], sku)))
                for sku, n in sorted(cells_of.get(str(name), {}).items())
            ),
        )
    return out


def virtual_clusters(
    cells: Mapping[str, VcCells], jobs: Iterable[JobSummary], cluster: Resources | None
) -> list[VirtualCluster]:
    """VC rows: GPUs are the VC's GPU leaf cells, CPUs its CPU cells if it has any; HiveD
    caps nothing else, so the rest is the cluster's (or uncapped where only caps matter)."""
    whole = cluster or vc_usage.UNLIMITED
    jobs = list(jobs)
    out = []
    for name, vc in sorted(cells.items()):
        cpu = float(vc.cpus) if vc.cpus else whole.cpu
        cap = Resources(gpu=vc.total, cpu=cpu, memory_mb=whole.memory_mb)
        used = Resources(gpu=vc.used, cpu=float(vc.cpus_used))
        sku = "/".join(vc.leaf_cell_types)
        bad = f", {vc.bad} unhealthy" if vc.bad else ""
        cpus = f", {vc.cpus} CPU cells" if vc.cpus else ""
        description = (
            f"HiveD virtual cluster: {vc.total} {sku} cells{bad}{cpus}"
            if vc.total or vc.cpus
            else "HiveD virtual cluster with no cells"
        )
        row = vc_usage.virtual_cluster(name, cap, used, jobs, description)
        row.gpu_types = vc.gpu_types()
        out.append(row)
    return out


class HivedCells:
    """HiveD's VC status at ``url``, re-read at most every ``ttl`` seconds."""

    def __init__(self, url: str, *, cpu_sku: str = "", ttl: float = 2.0, timeout: float = 5.0):
        self.url = url.rstrip("/")
        self.cpu_sku = cpu_sku
        self.timeout = timeout
        self.cache = Cached(self._fetch, ttl)
        #: The last answer, for the synchronous readers (waiting reasons, VC rows).
        self.last: dict[str, VcCells] | None = None

    async def refresh(self) -> dict[str, VcCells]:
        self.last = await self.cache.get()
        return self.last

    async def _fetch(self) -> dict[str, VcCells]:
        url = self.url + STATUS_PATH
        try:
            timeout = aiohttp.ClientTimeout(total=self.timeout)
            async with aiohttp.ClientSession(timeout=timeout) as session:
                async with session.get(url) as resp:
                    body: Any = await resp.json(content_type=None)
                    if resp.status != 200:
                        raise ValueError(f"HTTP {resp.status}: {body}")
        except (aiohttp.ClientError, TimeoutError, ValueError) as error:
            raise Unavailable(
                f"HiveD's virtual clusters at {url} cannot be read ({error or type(error).__name__}); "
                "check KubernetesBackend.hived_url and that hivedscheduler runs"
            ) from error
        if not isinstance(body, dict):
            raise Unavailable(f"HiveD at {url} answered {type(body).__name__}, not its VCs")
        return vc_cells(body, self.cpu_sku)
