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
API server, as a user's do.

Followers' first bytes, 20 opened at once each time: with no other load, through
jupyter-pai and straight from the API server; the load's own followers at its start; and
under the load, 20 straight from the API server a third of the way in and 20 through
jupyter-pai two thirds of the way in, each set alone."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import aiohttp
import psutil

from benchmarks.kube_cluster import cluster
from benchmarks.kube_list import seed
from benchmarks.list_jobs import free_port, start_server
from benchmarks.load import AUTH, Mix, auth_option, measure, session, submit, tickers, wait_for
from jupyter_pai.backends.kubernetes import KubernetesBackend
from jupyter_pai.backends.kubernetes.connect import api_client, default_namespace
from jupyter_pai.backends.kubernetes.rest import Rest
from tests.cluster import manifests

USER = "alice"
#: The Kubernetes server's memory goal at 5,000 jobs (the local one's is load.py's).
KUBE_RSS_GOAL_MB = 150.0
LOGGED_JOBS = 8
LOG_LINES = "for i in $(seq 1 1000); do echo line $i of a finished task; done"


async def seed_jobs(kubeconfig: str, count: int) -> None:
    b = KubernetesBackend(kubeconfig=kubeconfig, flavor="native", user=USER)
    await b.start()
    try:
        await seed(b, count, ended=True)
    finally:
        await b.close()


#: Opens a log follow: awaited, the response as its first bytes come.
Opener = Callable[[], Awaitable[aiohttp.ClientResponse]]
#: Followers started at once in the side-by-side first-bytes figure (as many as the load's).
FOLLOWERS = 20


async def first_bytes(open_follow: list[Opener], label: str) -> list[float]:
    """Seconds from asking to the first bytes, for followers all started at once."""

    async def one(start: Opener) -> float:
        t0 = time.perf_counter()
        resp = await start()
        try:
            await resp.content.readany()
            return time.perf_counter() - t0
        finally:
            resp.release()

    times = await asyncio.gather(*(one(f) for f in open_follow))
    p50, worst = statistics.median(times), max(times)
    print(f"  {label:<34} p50 {p50 * 1000:6.0f} ms   max {worst * 1000:6.0f} ms")
    return list(times)


class DirectFollows:
    """Followers of the same pods straight from the API server (as ``kubectl logs -f``),
    with alice's credentials: the baseline of the followers' first bytes."""

    def __init__(self, kubeconfig: str) -> None:
        self.kubeconfig = kubeconfig
        self.namespace = default_namespace(kubeconfig, None)

    async def __aenter__(self) -> DirectFollows:
        self.api = await api_client(self.kubeconfig, None)
        self.rest = Rest(self.api)
        pods = await self.rest.get(
            f"/api/v1/namespaces/{self.namespace}/pods", fieldSelector="status.phase=Running"
        )
        self.pods = sorted(p["metadata"]["name"] for p in pods["items"])
        assert self.pods, "no running pod to follow"
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.api.close()

    def openers(self) -> list[Opener]:
        def one(pod: str) -> Opener:
            url = f"/api/v1/namespaces/{self.namespace}/pods/{pod}/log"
            query = {"container": "main", "follow": "true"}
            timeout = aiohttp.ClientTimeout(total=None, sock_read=None)
            return lambda: self.rest.open("GET", url, query=query, timeout=timeout)

        return [one(self.pods[n % len(self.pods)]) for n in range(FOLLOWERS)]


def through(s: aiohttp.ClientSession, base: str, followed: list[str]) -> list[Opener]:
    """Followers of the followed jobs' tasks through jupyter-pai, as many as the load's."""

    def one(job_id: str, index: int) -> Opener:
        url = f"{base}/pai/api/jobs/{job_id}/logs?role=worker&index={index}&follow=true"
        return lambda: s.get(url, timeout=aiohttp.ClientTimeout(total=None))

    return [one(followed[n % len(followed)], n // len(followed) % 2) for n in range(FOLLOWERS)]


async def under_load(
    s: aiohttp.ClientSession, base: str, direct: DirectFollows, followed: list[str], seconds: float
) -> None:
    """20 more followers opened at once under the load, straight from the API server a third
    of the way in, through jupyter-pai two thirds of the way in: each set alone, so neither
    waits behind the other's openings (the load's own followers open at its start)."""
    await asyncio.sleep(seconds / 3)
    theirs = await first_bytes(direct.openers(), "under the load, API server directly")
    await asyncio.sleep(seconds / 3)
    ours = await first_bytes(through(s, base, followed), "under the load, through jupyter-pai")
    ratio = statistics.median(ours) / statistics.median(theirs)
    print(f"  under the load, ratio jupyter-pai / API server (p50): {ratio:.2f}x")


async def follow_baseline(
    s: aiohttp.ClientSession, base: str, direct: DirectFollows, followed: list[str]
) -> None:
    """The first bytes of 20 followers started at once with no other load: through
    jupyter-pai, and straight from the API server on the same pods, side by side: the
    kubelet's part (here the test cluster's) is in both."""

    print(f"follow, first bytes, {FOLLOWERS} followers at once, no other load:")
    for _ in range(2):  # the second round is the figure: the first opens connections
        ours = await first_bytes(through(s, base, followed), "through jupyter-pai")
        theirs = await first_bytes(direct.openers(), "API server directly")
    ratio = statistics.median(ours) / statistics.median(theirs)
    print(f"  ratio jupyter-pai / API server (p50): {ratio:.2f}x")


def relay_figures(pid: int) -> None:
    """The log relay's own share (a process of the server's: its CPU and memory are not in
    the server's figures above)."""
    for child in psutil.Process(pid).children():
        if "logrelay" in " ".join(child.cmdline()):
            cpu = sum(child.cpu_times()[:2])
            rss = child.memory_info().rss / 2**20
            print(
                f"log relay (pid {child.pid}): CPU {cpu:.1f} s since it started; RSS {rss:.0f} MB"
            )


async def run(port: int, pid: int, jobs: int, seconds: float, auth: str, kubeconfig: str) -> None:
    base = f"http://127.0.0.1:{port}"
    # A cluster given by --cluster-dir keeps the jobs of the runs before (stopped, not
    # deleted): this run's names are its own.
    run = f"{int(time.time()) % 1_000_000:x}-"
    async with session(base, auth) as s, contextlib.AsyncExitStack() as stack:
        logged = await submit(
            s,
            base,
            [{"name": f"lines-{run}{n}", "command": LOG_LINES} for n in range(LOGGED_JOBS)],
        )
        followed = await submit(s, base, tickers(run))
        await wait_for(s, base, logged, {"SUCCEEDED"}, 180)
        await wait_for(s, base, followed, {"RUNNING"}, 180)
        direct = await stack.enter_async_context(DirectFollows(kubeconfig))
        await follow_baseline(s, base, direct, followed)
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
        # What the load costs a follow that jupyter-pai does not make, and one it does.
        beside = asyncio.create_task(under_load(s, base, direct, followed, seconds))
        await measure(s, base, pid, Mix(ids, logged, followed), seconds, title, KUBE_RSS_GOAL_MB)
        await beside
        relay_figures(pid)
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
                asyncio.run(run(port, server.pid, args.jobs, args.seconds, args.auth, kubeconfig))
            finally:
                server.terminate()
                server.wait(timeout=30)


if __name__ == "__main__":
    main()
