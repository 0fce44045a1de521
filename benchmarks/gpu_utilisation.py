"""What GPU utilisation costs with N running jobs on Kubernetes: Prometheus queries per
refresh (goal: a constant, not one per job) and time, the batched snapshot vs asking
Prometheus per job (the baseline), and the time to derive every job's utilisation from
the snapshot (what ``GET abnormal-jobs`` adds; ``GET jobs`` itself reads no utilisation).

    python benchmarks/gpu_utilisation.py [--jobs 500] [--rounds 5]

A real Prometheus (Debian's package, as the tests use) scrapes a DCGM-format exporter
serving one GPU for each of ``--jobs`` pods (one single-task job each); jobs are
the backend's own models, not cluster objects, so what is measured is the reader."""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

import aiohttp

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.prometheus

from jupyter_pai.backends.kubernetes.gpumetrics import MEMORY, UTIL, PrometheusGpus
from jupyter_pai.backends.models import JobDetail, JobState, TaskState, TaskStatus
from jupyter_pai.backends.utilisation import job_utilisation
from tests.prometheus import GpuSeries, dcgm_exporter, prometheus

NS = "alice"


def jobs(n: int, gpus: int) -> list[JobDetail]:
    now = datetime.now(timezone.utc)
    return [
        JobDetail(
            id=f"{NS}~job{i}",
            name=f"job{i}",
            user=NS,
            state=JobState.RUNNING,
            virtual_cluster="default",
            submission_time=now,
            total_gpu_number=gpus,
            spec={},
            tasks=[TaskStatus(role="w", index=0, state=TaskState.RUNNING, gpu_number=gpus)],
        )
        for i in range(n)
    ]


async def per_job(session: aiohttp.ClientSession, url: str, pod_name: str) -> None:
    sel = f'{{namespace="{NS}",pod="{pod_name}"}}'
    for query in (
        f"{UTIL}{sel}",
        f"{MEMORY}{sel}",
        f"avg_over_time({UTIL}{sel}[1h])",
        f"max_over_time({MEMORY}{sel}[1h])",
    ):
        async with session.get(f"{url}/api/v1/query", params={"query": query}) as resp:
            assert (await resp.json())["status"] == "success"


def pod(i: int) -> str:
    return f"{NS}-job{i}-w-0"


async def measure(url: str, n: int, rounds: int) -> None:
    all_jobs = jobs(n, 1)
    batched = PrometheusGpus(url, NS, ttl=3600)  # one refresh, then the cache
    refresh, derive = [], []
    for _ in range(rounds):
        batched.cache.forget()
        before = batched.queries
        t = time.perf_counter()
        snapshot = await batched.snapshot()
        refresh.append(time.perf_counter() - t)
        assert len(snapshot.pods) == n, f"Prometheus has {len(snapshot.pods)} pods, not {n}"
        t = time.perf_counter()
        for i, job in enumerate(all_jobs):
            # Each job's utilisation, as the REST handler asks for it: the cached snapshot.
            s = await batched.snapshot()
            job_utilisation(job, {("w", 0): s.pods.get(pod(i), [])}, source="prometheus")
        derive.append(time.perf_counter() - t)
        per_refresh = batched.queries - before

    # Baseline: the same four figures asked of Prometheus job by job.
    naive = []
    sample = min(n, 50)  # timed on a sample, scaled to n
    async with aiohttp.ClientSession() as session:
        for _ in range(rounds):
            t = time.perf_counter()
            for i in range(sample):
                await per_job(session, url, pod(i))
            naive.append((time.perf_counter() - t) * n / sample)

    r, d, b = statistics.median(refresh), statistics.median(derive), statistics.median(naive)
    print(f"running jobs: {n} (1 GPU each), Prometheus series: {2 * n}")
    print(f"Prometheus queries per refresh, batched: {per_refresh} (per job asked: 0)")
    print(f"Prometheus queries per refresh, per job (baseline): {4 * n}")
    print(f"{'':52}{'median':>10}{'min':>10}")
    print(
        f"{'batched refresh (4 queries, every pod)':52}{r * 1e3:8.1f}ms{min(refresh) * 1e3:8.1f}ms"
    )
    print(
        f"{'every job utilisation from the snapshot':52}{d * 1e3:8.1f}ms{min(derive) * 1e3:8.1f}ms"
    )
    print(
        f"{'per-job queries (baseline, scaled from 50 jobs)':52}{b * 1e3:8.1f}ms{min(naive) * 1e3:8.1f}ms"
    )
    print(f"ratio per-job baseline / batched refresh: {b / r:.1f}x")
    print(
        "time added to GET jobs: none (GET jobs reads no utilisation; see GET abnormal-jobs above)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, dcgm_exporter() as exporter:
        exporter.gpus = [GpuSeries(NS, pod(i), 0, i % 100, 1000 + i) for i in range(args.jobs)]
        with prometheus(Path(tmp), exporter) as prom:
            deadline = time.monotonic() + 60
            while exporter.scrapes < 2:  # the series are in
                assert time.monotonic() < deadline, "Prometheus never scraped the exporter"
                time.sleep(0.2)
            time.sleep(1.5)
            asyncio.run(measure(prom.url, args.jobs, args.rounds))


if __name__ == "__main__":
    main()
