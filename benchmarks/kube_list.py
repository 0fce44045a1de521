"""``GET jobs`` from the watch cache vs a fresh LIST of the job objects, with N jobs in the
namespace, and the API-server requests one ``list_jobs`` makes after warm-up (goal: 0).

    python -m tests.cluster up --dir /tmp/c
    python benchmarks/kube_list.py --kubeconfig /tmp/c/users/alice.kubeconfig --jobs 5000

Jobs are created directly as their primary objects (native flavour: ConfigMaps built by the
backend's own builder), so no pods run; the cost measured is the listing."""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

from jupyter_pai.backends.kubernetes import KubernetesBackend
from jupyter_pai.backends.kubernetes.flavors.base import config_map_primary
from jupyter_pai.backends.kubernetes.naming import make_names
from jupyter_pai.backends.kubernetes.resources import CONFIG_MAP
from jupyter_pai.backends.kubernetes.rest import path
from jupyter_pai.spec import parse_job

SPEC = """
protocolVersion: 2
name: bench{i}
type: job
taskRoles:
  worker: {{instances: 2, commands: ['true'], resourcePerInstance: {{gpu: 1}}}}
"""


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--jobs", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    b = KubernetesBackend(kubeconfig=args.kubeconfig, flavor="native", user="bench")
    await b.start()
    rest = b._rest()
    have = len(b.cache["primary"].values())
    sem = asyncio.Semaphore(32)

    async def create(i: int) -> None:
        job = parse_job(SPEC.format(i=i)).job
        body = config_map_primary(job, make_names(job, "bench"), "native")
        body["metadata"]["namespace"] = b.namespace
        async with sem:
            await rest.create(CONFIG_MAP, b.namespace, body)

    t0 = time.perf_counter()
    await asyncio.gather(*(create(i) for i in range(have, args.jobs)))
    print(f"created {args.jobs - have} jobs in {time.perf_counter() - t0:.1f}s")
    while len(b.cache["primary"].values()) < args.jobs:
        await b.cache["primary"].changed(1.0)
    await b.list_jobs()  # warm-up
    before = rest.requests
    cached = []
    for _ in range(args.rounds):
        t = time.perf_counter()
        jobs = await b.list_jobs()
        cached.append(time.perf_counter() - t)
    per_get = (rest.requests - before) / args.rounds
    fresh = []
    selector = "app.kubernetes.io/managed-by=jupyter-pai,jupyter-pai.io/primary=true"
    for _ in range(max(3, args.rounds // 4)):
        t = time.perf_counter()
        token, n = None, 0
        while True:
            page = await rest.get(
                path(CONFIG_MAP, b.namespace),
                labelSelector=selector,
                limit=500,
                **{"continue": token},
            )
            n += len(page["items"])
            token = page["metadata"].get("continue")
            if not token:
                break
        fresh.append(time.perf_counter() - t)
    c, f = statistics.median(cached), statistics.median(fresh)
    print(f"jobs listed: {len(jobs)} (fresh LIST saw {n})")
    print(f"GET jobs from the cache (list_jobs, models built): median {c * 1000:.1f} ms")
    print(f"fresh LIST of the job objects (no models):          median {f * 1000:.1f} ms")
    print(f"ratio fresh LIST / cached list_jobs: {f / c:.2f}")
    print(f"API-server requests per list_jobs after warm-up: {per_get:g}")
    await b.close()


if __name__ == "__main__":
    asyncio.run(main())
