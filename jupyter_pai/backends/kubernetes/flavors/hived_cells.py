"""HiveD's virtual clusters, read from its web server: HiveD keeps them in its own
configuration and memory, not in the API server, so the hived flavour asks
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
from ...models import JobSummary, Resources, VirtualCluster
from .. import vcs
from ..promql import Cached

STATUS_PATH = "/v1/inspect/clusterstatus/virtualclusters"
# A leaf cell in any other state is held by (or promised to) a pod.
_FREE = "Free"


@dataclass(frozen=True)
class VcCells:
    """One virtual cluster's leaf cells (GPUs) as HiveD counts them."""

    name: str
    leaf_cell_types: tuple[str, ...]
    total: int
    used: int
    bad: int  # leaf cells HiveD marks unhealthy: still the VC's, not usable now


def _leaves(cell: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    children = cell.get("cellChildren") or []
    if not children:
        yield cell
    for child in children:
        yield from _leaves(child)


def vc_cells(status: Mapping[str, Any]) -> dict[str, VcCells]:
    """HiveD's virtual cluster status (VC name → its top cells) as counts per VC."""
    out = {}
    for name, cells in status.items():
        leaves = [leaf for cell in cells or [] for leaf in _leaves(cell)]
        types = sorted({str(c["leafCellType"]) for c in cells or [] if c.get("leafCellType")})
        out[str(name)] = VcCells(
            name=str(name),
            leaf_cell_types=tuple(types),
            total=len(leaves),
            used=sum(1 for leaf in leaves if leaf.get("cellState", _FREE) != _FREE),
            bad=sum(1 for leaf in leaves if leaf.get("cellHealthiness", "Healthy") != "Healthy"),
        )
    return out


def virtual_clusters(
    cells: Mapping[str, VcCells], jobs: Iterable[JobSummary], cluster: Resources | None
) -> list[VirtualCluster]:
    """VC rows: GPUs are the VC's leaf cells; HiveD caps nothing else, so CPU and memory
    are the cluster's (or uncapped where only caps matter)."""
    whole = cluster or vcs.UNLIMITED
    jobs = list(jobs)
    out = []
    for name, vc in sorted(cells.items()):
        cap = Resources(gpu=vc.total, cpu=whole.cpu, memory_mb=whole.memory_mb)
        sku = "/".join(vc.leaf_cell_types)
        bad = f", {vc.bad} unhealthy" if vc.bad else ""
        description = (
            f"HiveD virtual cluster: {vc.total} {sku} cells{bad}"
            if vc.total
            else "HiveD virtual cluster with no cells"
        )
        out.append(vcs.virtual_cluster(name, cap, Resources(gpu=vc.used), jobs, description))
    return out


class HivedCells:
    """HiveD's VC status at ``url``, re-read at most every ``ttl`` seconds."""

    def __init__(self, url: str, *, ttl: float = 2.0, timeout: float = 5.0):
        self.url = url.rstrip("/")
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
        return vc_cells(body)
