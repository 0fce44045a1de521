"""The load of ``benchmarks/load.py`` against a Jupyter server on the Kubernetes backend
(native flavor, user alice) of the test cluster: 5,000 jobs, 50 clients listing and reading
job detail, 20 reading the last 100 lines of a 1,000-line log, 20 following the logs of
running jobs, for ``--seconds``; the same figures and goals.

    python -m benchmarks.kube_load [--jobs 5000] [--seconds 60] [--cluster-dir DIR]

Starts its own test cluster (with the runner node, whose pods really run) unless
``--cluster-dir`` names a running one. Most jobs are made directly as their primary objects
(``kube_list.seed``: no pods, ended as the completion policy ends a job, as the local
benchmark's are ended records; the listing is what they cost); the jobs whose logs are read
(8, ended) and followed (4 with two workers, printing a line every 50 ms) are submitted over
REST and run as pods on the runner node, so their logs come from the kubelet through the
API server, as a user's do."""

from __future__ import annotations

import argparse
import asyncio
import tempfile
from pathlib import Path

from benchmarks.kube_cluster import cluster
from benchmarks.kube_list import seed
from benchmarks.list_jobs import free_port, start_server
from benchmarks.load import AUTH, Mix, auth_option, measure, session, submit, tickers, wait_for
from jupyter_pai.backends.kubernetes import KubernetesBackend
from tests.cluster import manifests

USER = "alice"
LOGGED_JOBS = 8
LOG_LINES = "for i in $(seq 1 1000); do echo line $i of a finished task; done"


async def seed_jobs(kubeconfig: str, count: int) -> None:
    b = KubernetesBackend(kubeconfig=kubeconfig, flavor="native", user=USER)
    await b.start()
    try:
        await seed(b, count, ended=True)
    finally:
        await b.close()


async def run(port: int, pid: int, jobs: int, seconds: float, auth: str) -> None:
    base = f"http://127.0.0.1:{port}"
    async with session(base, auth) as s:
        logged = await submit(
            s,
            base,
            [{"name": f"lines-{n}", "command": LOG_LINES} for n in range(LOGGED_JOBS)],
        )
        followed = await submit(s, base, tickers())
        await wait_for(s, base, logged, {"SUCCEEDED"}, 180)
        await wait_for(s, base, followed, {"RUNNING"}, 180)
        ids: list[str] = []
        token = ""
        while True:  # every job's id, as a client pages through them
            query = f"?limit=1000&continue={token}" if token else "?limit=1000"
            async with s.get(f"{base}/pai/api/jobs{query}") as r:
                page = await r.json()
            ids += [job["id"] for job in page["items"]]
            token = page.get("continue") or ""
            if not token:
                break
        title = (
            f"Kubernetes backend (native), {len(ids)} jobs, {seconds:.0f} s, 70 polling clients"
            f" + 20 followers, authenticated by {auth}"
        )
        await measure(s, base, pid, Mix(ids, logged, followed), seconds, title)
        for job_id in logged + followed:
            async with s.delete(f"{base}/pai/api/jobs/{job_id}", headers=AUTH) as r:
                await r.read()


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--jobs", type=int, default=5000)
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--cluster-dir", help="use this running cluster (tests.cluster up --dir)")
    auth_option(ap)
    args = ap.parse_args()
    with cluster(args.cluster_dir, gpu_nodes=False, runner=True, schedulers=False) as state:
        kubeconfig = state.users[USER]
        # The submitted jobs count too: seed the rest.
        asyncio.run(seed_jobs(kubeconfig, args.jobs - LOGGED_JOBS - len(tickers())))
        options = [
            "--PAIConfig.backend=kubernetes",
            f"--KubernetesBackend.kubeconfig={kubeconfig}",
            "--KubernetesBackend.flavor=native",
            f"--KubernetesBackend.user={USER}",
            f"--KubernetesBackend.node_selector={{'{manifests.RUNNER_LABEL}': 'true'}}",
        ]
        with tempfile.TemporaryDirectory(prefix="pai-bench-") as tmp:
            state_dir, root = Path(tmp) / "state", Path(tmp) / "root"
            state_dir.mkdir()
            root.mkdir()
            port = free_port()
            server = start_server(state_dir, root, port, options)
            try:
                asyncio.run(run(port, server.pid, args.jobs, args.seconds, args.auth))
            finally:
                server.terminate()
                server.wait(timeout=30)


if __name__ == "__main__":
    main()
