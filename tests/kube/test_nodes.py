"""``GET nodes`` on the test cluster, once per flavor: every node with its allocatable
GPUs, CPU and memory, and a running job's pods counted on the nodes they run on."""

from __future__ import annotations

import asyncio

import pytest

from jupyter_pai.spec import parse_job
from tests.cluster.pytest_plugin import TestCluster
from tests.kube.test_backend_jobs import GPU_POOL, NS, _cleanup, make_backend

pytestmark = pytest.mark.kube


async def test_nodes_with_a_running_job(kube_cluster: TestCluster, flavor: str) -> None:
    _cleanup(kube_cluster, NS)
    b = make_backend(kube_cluster, flavor, node_selector=GPU_POOL)
    await b.start()
    try:
        before = {n.name: n for n in await b.nodes()}
        assert before["gpu-0"].gpu_total == 8 and before["runner-0"].gpu_total == 4
        assert before["gpu-0"].cpu_allocatable == 64
        assert before["gpu-0"].memory_mb_allocatable == 512 * 1024
        spec = {
            "protocolVersion": 2,
            "name": "hw",
            "type": "job",
            "taskRoles": {
                "w": {
                    "instances": 2,
                    "resourcePerInstance": {"cpu": 2, "memoryMB": 1024, "gpu": 3},
                    "commands": ["sleep 600"],
                }
            },
        }
        job = await b.submit(parse_job(spec).job)
        deadline = asyncio.get_running_loop().time() + 60
        # Every task placed: a gang's pods are bound one by one (HiveD's too).
        while not all(t.node for t in (await b.get_job(job.id)).tasks):
            assert asyncio.get_running_loop().time() < deadline, "the job never ran"
            await asyncio.sleep(0.2)
        nodes = await b.nodes()
        holding = [n for n in nodes if job.id in n.jobs]
        assert holding and all(n.name.startswith("gpu-") for n in holding), nodes
        assert sum(n.gpu_used for n in holding) == 6
        assert sum(n.cpu_requested for n in holding) == 4
        assert sum(n.memory_mb_requested for n in holding) == 2048
        assert all(n.gpu_free == n.gpu_total - n.gpu_used for n in nodes)
        assert not any(job.id in n.jobs for n in nodes if n not in holding)
    finally:
        await b.close()
        _cleanup(kube_cluster, NS)
