"""Each node's utilisation for the hardware view, from a Prometheus server: CPU busy and
memory used from the node exporter, GPU busy from NVIDIA's DCGM exporter. Three queries
answer for every node at once and are cached for ``ttl`` seconds, so the cost does not
grow with nodes or viewers.

A series is matched to its node by the labels scrape configurations commonly give it:
``node`` or ``kubernetes_node`` (relabelled from the pod's node), ``Hostname`` (what
dcgm-exporter sets), else the host of ``instance`` against the node's name and addresses."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ..models import NodeResources
from . import promql

QUERIES = {
    "cpu": '100 * (1 - avg by (node, kubernetes_node, instance) (rate(node_cpu_seconds_total{mode="idle"}[1m])))',
    "memory": "100 * (1 - node_memory_MemAvailable_bytes / node_memory_MemTotal_bytes)",
    "gpu": "avg by (Hostname, node, kubernetes_node, instance) (DCGM_FI_DEV_GPU_UTIL)",
}
NO_PROMETHEUS = "utilisation needs a Prometheus server (c.KubernetesBackend.prometheus_url)"
NO_SERIES = "Prometheus has no node-exporter series for this node"


@dataclass
class NodeSnapshot:
    """Per metric (``cpu``, ``memory``, ``gpu``): each series' possible node names and its
    value (%); ``note`` says why there is nothing, if so."""

    series: dict[str, list[tuple[list[str], float]]] = field(default_factory=dict)
    note: str | None = None


def series_keys(labels: dict[str, str]) -> list[str]:
    """The name a series knows its node by: the most specific label it has. ``instance``
    only counts without the others, since it is the exporter's own address (a
    dcgm-exporter scraped through a service is not on the node its GPUs are)."""
    for key in ("node", "kubernetes_node", "Hostname"):
        if labels.get(key):
            return [labels[key]]
    instance = labels.get("instance", "")
    if not instance:
        return []
    host = instance if instance.endswith("]") else instance.rsplit(":", 1)[0]
    return [host.strip("[]")]


def node_aliases(obj: dict[str, Any]) -> set[str]:
    """A Node object's name and addresses (InternalIP, Hostname, …)."""
    status = obj.get("status") or {}
    return {obj["metadata"]["name"]} | {
        a["address"] for a in status.get("addresses") or [] if a.get("address")
    }


def attach(
    resources: Iterable[NodeResources], objects: Iterable[dict[str, Any]], snap: NodeSnapshot
) -> None:
    """Set each node's ``cpu_percent``, ``memory_percent`` and ``gpu_percent`` from
    ``snap`` (None where no series is its), or the note saying why none is."""
    aliases = {obj["metadata"]["name"]: node_aliases(obj) for obj in objects}
    for node in resources:
        if snap.note:
            node.utilisation_note = snap.note
            continue
        names = aliases.get(node.name, {node.name})
        found: dict[str, float] = {}
        for metric, series in snap.series.items():
            for keys, value in series:
                if names.intersection(keys):
                    found[metric] = round(value, 1)
                    break
        node.cpu_percent = found.get("cpu")
        node.memory_percent = found.get("memory")
        node.gpu_percent = found.get("gpu")
        if node.cpu_percent is None and node.memory_percent is None:
            node.utilisation_note = NO_SERIES


class PrometheusNodes:
    def __init__(self, url: str, *, ttl: float = 10.0, timeout: float = 5.0):
        self.url = url.rstrip("/")
        self.timeout = timeout
        #: Queries sent so far (the tests count them).
        self.queries = 0
        self.cache = promql.Cached(self._refresh, ttl)

    async def snapshot(self) -> NodeSnapshot:
        """The cached snapshot, or a fresh one when it is older than ``ttl``."""
        return await self.cache.get()

    async def _refresh(self) -> NodeSnapshot:
        self.queries += len(QUERIES)
        try:
            answers = await promql.instant_all(self.url, QUERIES, self.timeout)
        except promql.NoAnswer as error:
            # Remembered for ttl as well: an unreachable Prometheus is not asked each poll.
            return NodeSnapshot(note=str(error))
        series = {
            metric: [(series_keys(labels), value) for labels, value in samples]
            for metric, samples in answers.items()
        }
        return NodeSnapshot(series=series)
