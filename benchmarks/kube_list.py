"""``GET jobs`` from the watch cache vs a fresh LIST of the job objects, with N jobs in the
namespace, and the API-server requests one ``GET jobs`` makes after warm-up (goal: 0).

    python benchmarks/kube_list.py [--jobs 5000] [--rounds 20] [--cluster-dir DIR]

Starts its own test cluster (tests/cluster) unless ``--cluster-dir`` names a running one.
Jobs are created directly as their primary objects (native flavor: ConfigMaps built by
the backend's own builder), so no pods run; the cost measured is the listing. "GET jobs"
is what the REST handler does: ``list_jobs`` and each summary to JSON."""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.cluster

from benchmarks.kube_cluster import cluster
from jupyter_pai.backends.kubernetes import KubernetesBackend
from jupyter_pai.backends.kubernetes.flavors.base import config_map_primary
from jupyter_pai.backends.kubernetes.naming import ANN_OUTCOME, make_names
from jupyter_pai.backends.kubernetes.resources import CONFIG_MAP
from jupyter_pai.backends.kubernetes.rest import ApiError, path
from jupyter_pai.backends.kubernetes.states import now
from jupyter_pai.backends.models import JobList
from jupyter_pai.errors import Unavailable
from jupyter_pai.spec import parse_job

SPEC = """
protocolVersion: 2
name: bench{i}
type: job
taskRoles:
  worker: {{instances: 2, commands: ['true'], resourcePerInstance: {{gpu: 1}}}}
"""
SELECTOR = "app.kubernetes.io/managed-by=jupyter-pai,jupyter-pai.io/primary=true"


async def run(kubeconfig: str, jobs: int, rounds: int) -> None:
    b = KubernetesBackend(kubeconfig=kubeconfig, flavor="native", user="bench")
    await b.start()
    try:
        await measure(b, jobs, rounds)
    finally:
        await b.close()


async def seed(b: KubernetesBackend, count: int, *, ended: bool = False) -> None:
    """Have ``count`` jobs of the backend's user in its namespace: native primary objects
    (ConfigMaps built by the backend's own builder) made directly, 8 at a time, so no pod
    runs; waits until the backend's watch cache holds them all. ``ended``: each carries the
    outcome the completion policy writes when a job ends (SUCCEEDED), else they wait."""
    rest = b._rest()
    have = len(b.cache["primary"].values())
    sem = asyncio.Semaphore(8)

    async def create(i: int) -> None:
        job = parse_job(SPEC.format(i=i)).job
        body = config_map_primary(job, make_names(job, b.user), "native")
        body["metadata"]["namespace"] = b.namespace
        if ended:
            outcome = {"state": "SUCCEEDED", "reason": "every task succeeded", "exitCode": 0}
            body["metadata"]["annotations"][ANN_OUTCOME] = json.dumps(outcome | {"time": now()})
        async with sem:
            for attempt in range(5):  # a busy 2-core machine times out now and then
                try:
                    await rest.create(CONFIG_MAP, b.namespace, body)
                    return
                except Unavailable:
                    if attempt == 4:
                        raise
                except ApiError as error:
                    if error.status != 409:  # 409: an earlier try got through
                        raise
                    return

    t0 = time.perf_counter()
    await asyncio.gather(*(create(i) for i in range(have, count)))
    print(f"created {count - have} jobs in {time.perf_counter() - t0:.1f}s", flush=True)
    while len(b.cache["primary"].values()) < count:
        await b.cache["primary"].changed(1.0)


async def measure(b: KubernetesBackend, count: int, rounds: int) -> None:
    rest = b._rest()
    await seed(b, count)

    async def get_jobs() -> int:
        jobs = await b.list_jobs()
        body = JobList(items=jobs).model_dump_json(by_alias=True)  # as the handler answers
        return len(jobs) if body else 0

    t = time.perf_counter()
    await get_jobs()  # warm-up: the first call derives every summary
    first = time.perf_counter() - t
    before = rest.requests
    cached, listed = [], 0
    for _ in range(rounds):
        t = time.perf_counter()
        listed = await get_jobs()
        cached.append(time.perf_counter() - t)
    per_get = (rest.requests - before) / rounds
    fresh, seen = [], 0
    for _ in range(rounds):
        t = time.perf_counter()
        token, seen = None, 0
        while True:
            page = await rest.get(
                path(CONFIG_MAP, b.namespace),
                labelSelector=SELECTOR,
                limit=500,
                **{"continue": token},
            )
            seen += len(page["items"])
            token = page["metadata"].get("continue")
            if not token:
                break
        fresh.append(time.perf_counter() - t)
    c, f = statistics.median(cached), statistics.median(fresh)
    print(f"jobs: {listed} listed from the cache, {seen} in a fresh LIST")
    print(f"{'':44}{'median':>10}{'min':>10}")
    print(
        f"{'GET jobs from the cache (list_jobs + JSON)':44}{c * 1e3:8.1f}ms{min(cached) * 1e3:8.1f}ms"
    )
    print(
        f"{'fresh LIST of the job objects (500/page)':44}{f * 1e3:8.1f}ms{min(fresh) * 1e3:8.1f}ms"
    )
    print(f"{'first GET jobs (derives every summary)':44}{first * 1e3:8.1f}ms")
    print(f"ratio fresh LIST / cached GET jobs: {f / c:.1f}x")
    print(f"API-server requests per GET jobs after warm-up: {per_get:g}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--cluster-dir", help="use this running cluster (tests.cluster up --dir)")
    args = parser.parse_args()
    with cluster(args.cluster_dir, gpu_nodes=False) as state:
        asyncio.run(run(state.users["alice"], args.jobs, args.rounds))


if __name__ == "__main__":
    main()
