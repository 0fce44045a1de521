"""GPU utilisation on Kubernetes, once per flavor: a real Prometheus (Debian's package)
scrapes a DCGM-format exporter whose series name the test cluster's pods; the backend
reads a busy job, an idle job and a job on no GPU from it with one batch of queries per
refresh, flags the idle one abnormal, and an unreachable Prometheus becomes a note."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from jupyter_pai.backends.kubernetes import KubernetesBackend
from jupyter_pai.backends.models import JobState, JobUtilisation
from jupyter_pai.spec import parse_job
from tests.cluster.pytest_plugin import TestCluster
from tests.kube.test_backend_jobs import GPU_POOL, NS, _cleanup, make_backend
from tests.prometheus import DcgmExporter, GpuSeries, Prometheus, prometheus

pytestmark = pytest.mark.kube
TTL = 1.0


@pytest.fixture
def prom(tmp_path: Path, exporter: DcgmExporter) -> Iterator[Prometheus]:
    with prometheus(tmp_path / "prometheus", exporter) as p:
        yield p


def job(name: str, gpu: int) -> Any:
    return parse_job(
        {
            "protocolVersion": 2,
            "name": name,
            "type": "job",
            "taskRoles": {
                "w": {
                    "instances": 1,
                    "resourcePerInstance": {"cpu": 1, "memoryMB": 128, "gpu": gpu},
                    "commands": ["sleep 600"],
                }
            },
        }
    ).job


async def until(check: Any, what: str, timeout: float = 30) -> Any:
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        value = await check()
        if value:
            return value
        assert asyncio.get_running_loop().time() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.2)


async def test_busy_idle_and_cpu_jobs_from_prometheus(
    kube_cluster: TestCluster, flavor: str, exporter: DcgmExporter, prom: Prometheus
) -> None:
    _cleanup(kube_cluster, NS)
    # Simulated GPU nodes: the pods run at once and stay Running.
    b: KubernetesBackend = make_backend(
        kube_cluster,
        flavor,
        node_selector=GPU_POOL,
        prometheus_url=prom.url,
        utilisation_cache_seconds=TTL,
        abnormal_grace_minutes=0,
    )
    await b.start()
    try:
        ids = {}
        for name, gpu in (("busy", 2), ("idle", 1), ("cpu", 0)):
            ids[name] = (await b.submit(job(name, gpu))).id

        async def pods() -> dict[str, str] | None:
            found = {}
            for name, job_id in ids.items():
                detail = await b.get_job(job_id)
                view = b.views.view(b.views.primary(job_id)).view
                if detail.state != JobState.RUNNING or not view.tasks[0].pod:
                    return None
                found[name] = view.tasks[0].pod
            return found

        pod = await until(pods, "the three jobs to run", 60)
        exporter.gpus = [
            GpuSeries(NS, pod["busy"], 0, 90, 30000),
            GpuSeries(NS, pod["busy"], 1, 80, 20000),
            GpuSeries(NS, pod["idle"], 0, 3, 500),
            # Another namespace's pod of the same name is not ours.
            GpuSeries("bob", pod["idle"], 0, 100, 1),
        ]

        async def busy() -> JobUtilisation | None:
            u = await b.utilisation(ids["busy"])
            return u if u.current is not None and u.current.gpu_percent == 85 else None

        u = await until(busy, "Prometheus to have scraped the busy job")
        assert u.source == "prometheus" and u.note is None
        assert u.current is not None and u.current.memory_mb == 50000
        assert u.last_hour is not None and 80 <= (u.last_hour.gpu_percent or 0) <= 90
        assert u.tasks[0].current == u.current and u.tasks[0].gpu_number == 2

        idle = await b.utilisation(ids["idle"])
        assert idle.current is not None
        assert (idle.current.gpu_percent, idle.current.memory_mb) == (3, 500)
        cpu = await b.utilisation(ids["cpu"])
        assert cpu.current is None and cpu.tasks[0].current is None, cpu  # not zeros
        assert cpu.note is None

        # One refresh answers every job: the same 4 queries for 3 jobs asked 3 times each.
        await asyncio.sleep(TTL)
        before = b.gpu_metrics.queries if b.gpu_metrics else 0
        for _ in range(3):
            await asyncio.gather(*(b.utilisation(i) for i in ids.values()))
        assert b.gpu_metrics is not None and b.gpu_metrics.queries - before == 4

        # The idle job is abnormal (judged at once here: no grace), the others are not.
        abnormal = await b.abnormal_jobs()
        assert [(a.job.id, a.may_stop) for a in abnormal] == [(ids["idle"], True)], abnormal
        assert abnormal[0].reasons == ["GPU utilisation 3 % over the last hour (under 10 %)"]
        assert abnormal[0].gpu_percent_last_hour == 3

        # Prometheus goes away: a note, no error, no stale figures after the cache time.
        prom.stop()
        await asyncio.sleep(TTL)
        gone = await b.utilisation(ids["busy"])
        assert gone.current is None and gone.note is not None, gone
        assert prom.url in gone.note and "did not answer" in gone.note
        assert await b.abnormal_jobs() == []  # not measured is not idle
    finally:
        await b.close()
        _cleanup(kube_cluster, NS)
