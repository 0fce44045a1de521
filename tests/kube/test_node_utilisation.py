"""The hardware view's measured use on Kubernetes: a real Prometheus (Debian's package)
scrapes Debian's real node exporter, measuring this machine as node runner-0 (the label a
Kubernetes scrape configuration gives it), and the DCGM stand-in, whose GPUs say they are
gpu-0's (dcgm-exporter's ``Hostname``). ``GET nodes`` shows each node's CPU, memory and GPU
use from three queries for all nodes, nothing for a node no exporter measures, and a note
when Prometheus goes away. No job is involved, so one flavor (native) stands for all."""

from __future__ import annotations

import asyncio
from pathlib import Path

import psutil
import pytest

from jupyter_pai.backends.kubernetes import KubernetesBackend
from jupyter_pai.backends.kubernetes.nodemetrics import NO_PROMETHEUS, NO_SERIES
from jupyter_pai.backends.models import NodeResources
from tests.cluster.pytest_plugin import TestCluster
from tests.kube.test_backend_jobs import GPU_POOL, NS, make_backend
from tests.prometheus import DcgmExporter, GpuSeries, node_exporter, prometheus

pytestmark = pytest.mark.kube
TTL = 1.0


async def nodes_once(
    b: KubernetesBackend, ready: str, timeout: float = 30
) -> dict[str, NodeResources]:
    """``GET nodes`` once node ``ready`` has its CPU and memory measured (a CPU rate needs
    two scrapes)."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        nodes = {n.name: n for n in await b.nodes()}
        if nodes[ready].cpu_percent is not None and nodes[ready].memory_percent is not None:
            return nodes
        assert asyncio.get_running_loop().time() < deadline, f"never measured: {nodes[ready]}"
        await asyncio.sleep(0.3)


async def test_nodes_show_what_the_exporters_measure(
    kube_cluster: TestCluster, exporter: DcgmExporter, tmp_path: Path
) -> None:
    exporter.gpus = [
        GpuSeries(NS, "some-pod", 0, 70, 1000, hostname="gpu-0"),
        GpuSeries(NS, "some-pod", 1, 50, 1000, hostname="gpu-0"),
    ]
    with (
        node_exporter(tmp_path / "node-exporter") as port,
        prometheus(tmp_path / "prometheus", exporter, node_exporters={"runner-0": port}) as prom,
    ):
        b = make_backend(
            kube_cluster,
            "native",
            node_selector=GPU_POOL,
            prometheus_url=prom.url,
            utilisation_cache_seconds=TTL,
        )
        await b.start()
        try:
            nodes = await nodes_once(b, "runner-0")
            runner = nodes["runner-0"]
            print(
                f"\nrunner-0 (this machine): CPU {runner.cpu_percent} %, memory {runner.memory_percent} %"
            )
            assert runner.cpu_percent is not None and 0 <= runner.cpu_percent <= 100
            # The node exporter's memory figure is this machine's (MemAvailable, as psutil's).
            assert runner.memory_percent is not None
            assert abs(runner.memory_percent - psutil.virtual_memory().percent) < 5
            assert runner.gpu_percent is None and runner.utilisation_note is None
            gpu0 = nodes["gpu-0"]
            assert gpu0.gpu_percent == 60  # the mean of its two GPUs
            # No node exporter runs for the simulated nodes: nothing, and why, not zeros.
            assert (gpu0.cpu_percent, gpu0.memory_percent) == (None, None)
            assert gpu0.utilisation_note == NO_SERIES
            assert nodes["gpu-1"].gpu_percent is None

            # One refresh serves every node and every viewer: three queries.
            assert b.node_metrics is not None
            await asyncio.sleep(TTL)
            before = b.node_metrics.queries
            await asyncio.gather(*(b.nodes() for _ in range(3)))
            assert b.node_metrics.queries - before == 3

            # Prometheus goes away: the nodes are still listed, their use is a note.
            prom.stop()
            await asyncio.sleep(TTL)
            gone = {n.name: n for n in await b.nodes()}
            assert gone["runner-0"].gpu_total == 4
            assert gone["runner-0"].cpu_percent is None
            note = gone["runner-0"].utilisation_note or ""
            assert prom.url in note and "did not answer" in note, note
        finally:
            await b.close()


async def test_without_prometheus_the_nodes_say_so(kube_cluster: TestCluster) -> None:
    b = make_backend(kube_cluster, "native", node_selector=GPU_POOL, prometheus_url="")
    await b.start()
    try:
        nodes = await b.nodes()
        assert nodes and all(n.utilisation_note == NO_PROMETHEUS for n in nodes)
        assert all(n.cpu_percent is None and n.gpu_percent is None for n in nodes)
    finally:
        await b.close()
