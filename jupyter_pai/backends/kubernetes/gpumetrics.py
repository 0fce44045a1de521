"""Pods' GPU readings from a Prometheus server that scrapes NVIDIA's DCGM exporter
(``DCGM_FI_DEV_GPU_UTIL`` %, ``DCGM_FI_DEV_FB_USED`` MiB, labelled with the GPU's pod and
namespace). One snapshot holds every pod of the namespace: a refresh sends the same four
queries however many jobs run, and answers are cached for ``ttl`` seconds, so a panel
polling each job's utilisation costs Prometheus nothing more per job."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from ..utilisation import GpuReading
from . import promql

UTIL = "DCGM_FI_DEV_GPU_UTIL"
MEMORY = "DCGM_FI_DEV_FB_USED"


@dataclass
class GpuSnapshot:
    """Pod name → its GPUs' readings; ``note`` says why there are none, if so."""

    pods: dict[str, list[GpuReading]] = field(default_factory=dict)
    note: str | None = None


class PrometheusGpus:
    def __init__(self, url: str, namespace: str, *, ttl: float = 10.0, timeout: float = 5.0):
        self.url = url.rstrip("/")
        self.namespace = namespace
        self.timeout = timeout
        #: Queries sent so far (what the benchmark counts).
        self.queries = 0
        self.cache = promql.Cached(self._refresh, ttl)

    def _queries(self) -> dict[str, str]:
        sel = f'{{namespace="{self.namespace}"}}'
        return {
            "percent": f"{UTIL}{sel}",
            "memory": f"{MEMORY}{sel}",
            "hour_percent": f"avg_over_time({UTIL}{sel}[1h])",
            "hour_memory": f"max_over_time({MEMORY}{sel}[1h])",
        }

    async def snapshot(self) -> GpuSnapshot:
        """The cached snapshot, or a fresh one when it is older than ``ttl``."""
        return await self.cache.get()

    async def _refresh(self) -> GpuSnapshot:
        names = self._queries()
        self.queries += len(names)
        try:
            answers = await promql.instant_all(self.url, names, self.timeout)
        except promql.NoAnswer as error:
            # An unreachable Prometheus is remembered for ttl too: no hammering it.
            return GpuSnapshot(note=str(error))
        by_gpu: dict[tuple[str, str], dict[str, float]] = defaultdict(dict)
        for key, samples in answers.items():
            for labels, value in samples:
                pod = labels.get("pod") or labels.get("exported_pod")
                if pod:
                    by_gpu[(pod, labels.get("gpu") or labels.get("UUID") or "")][key] = value
        pods: dict[str, list[GpuReading]] = defaultdict(list)
        for (pod, _), v in sorted(by_gpu.items()):
            pods[pod].append(
                GpuReading(
                    percent=v.get("percent"),
                    memory_mb=v.get("memory"),
                    hour_percent=v.get("hour_percent"),
                    hour_memory_mb=v.get("hour_memory"),
                )
            )
        return GpuSnapshot(pods=dict(pods))
