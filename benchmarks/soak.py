"""A long soak of a real Jupyter server at moderate load: submit, follow, list, read and
stop jobs for ``--minutes`` (an hour by default), and print once a minute what the
server holds: RSS, open file descriptors, threads, TCP connections (on Kubernetes: its
watches and port-forwards to the API server), child processes and their memory (the log
relay's on Kubernetes), with the requests and errors of that minute and their p99 (and
the first errors in words). What it holds should
be flat after the warm-up (the first minutes); the last line compares the last minute with
the third. Ended jobs beyond the newest 100 are deleted each minute, as a user cleans up,
so the figures follow the server, not a growing list.

    python -m benchmarks.soak [--backend local|kube] [--minutes 60] [--cluster-dir DIR]

Each cycle (about every 3 s): a short job of two tasks printing for ~5 s is submitted and
its log followed while it runs; the job list is read (with ETag) and a job's detail; every
fourth cycle a long job is submitted and stopped a few seconds later. On ``kube`` the jobs
run as pods on the test cluster's runner node (native flavour), so follows and logs go
through the API server as a user's do."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import signal
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import psutil

from benchmarks.list_jobs import free_port, start_server, stats
from benchmarks.load import AUTH, session

SHORT = "for i in $(seq 1 50); do echo soak line $i; sleep 0.1; done"
LONG = "sleep 600"


#: Ended jobs beyond the newest this many are deleted each minute, so what the server holds
#: follows its own leaks, not a growing number of jobs.
KEEP = 100


class Minute:
    def __init__(self) -> None:
        self.times: list[float] = []
        self.errors = 0
        self.said: list[str] = []

    def error(self, what: str) -> None:
        self.errors += 1
        if len(self.said) < 3:
            self.said.append(what)


async def call(
    s: aiohttp.ClientSession, method: str, url: str, m: Minute, **kw: Any
) -> tuple[int, Any]:
    start = time.perf_counter()
    try:
        async with s.request(method, url, **kw) as r:
            body = await r.read()
            status = r.status
    except (aiohttp.ClientError, asyncio.TimeoutError) as error:
        m.error(f"{method} {url.split('/pai/api')[-1]}: {type(error).__name__}")
        return 0, None
    m.times.append(time.perf_counter() - start)
    if status >= 400:
        m.error(f"{method} {url.split('/pai/api')[-1]}: {status} {body[:200]!r}")
    return status, body


async def follow(s: aiohttp.ClientSession, url: str, seconds: float, m: Minute) -> None:
    try:
        async with s.get(url, timeout=aiohttp.ClientTimeout(total=seconds + 30)) as r:
            if r.status != 200:
                m.error(f"follow: {r.status} {(await r.read())[:200]!r}")
                return
            until = time.monotonic() + seconds
            while time.monotonic() < until:
                try:
                    chunk = await asyncio.wait_for(r.content.readany(), until - time.monotonic())
                except asyncio.TimeoutError:
                    break
                if not chunk:
                    break  # the job ended
    except (aiohttp.ClientError, asyncio.TimeoutError) as error:
        m.error(f"follow: {type(error).__name__}")


async def cycle(
    s: aiohttp.ClientSession, base: str, n: int, m: Minute, etag: list[str], background: set[Any]
) -> None:
    api = f"{base}/pai/api"
    status, body = await call(
        s,
        "POST",
        f"{api}/jobs",
        m,
        json={"name": f"soak-{n}", "instances": 2, "command": SHORT},
        headers=AUTH,
    )
    job_id = None
    if status == 201 and body:
        job_id = json.loads(body)["job"]["id"]
    headers = {"If-None-Match": etag[0]} if etag[0] else {}
    start = time.perf_counter()
    async with s.get(f"{api}/jobs?limit=50", headers=headers) as r:
        await r.read()
        m.times.append(time.perf_counter() - start)
        if r.status == 200:
            etag[0] = r.headers.get("ETag", "")
        elif r.status != 304:
            m.error(f"GET jobs: {r.status}")
    if job_id:
        await call(s, "GET", f"{api}/jobs/{job_id}", m)
        url = f"{api}/jobs/{job_id}/logs?role=worker&index=0&follow=true"
        task = asyncio.create_task(follow(s, url, 8.0, m))
        background.add(task)
        task.add_done_callback(background.discard)
    if n % 4 == 0:
        status, body = await call(
            s,
            "POST",
            f"{api}/jobs",
            m,
            json={"name": f"soak-long-{n}", "command": LONG},
            headers=AUTH,
        )
        if status == 201 and body:
            long_id = json.loads(body)["job"]["id"]

            async def stop_later() -> None:
                await asyncio.sleep(5)
                await call(s, "DELETE", f"{api}/jobs/{long_id}", m, headers=AUTH)

            task = asyncio.create_task(stop_later())
            background.add(task)
            task.add_done_callback(background.discard)


def held(proc: psutil.Process) -> dict[str, int]:
    with proc.oneshot():
        return {
            "rss_mb": proc.memory_info().rss // 2**20,
            "fds": proc.num_fds(),
            "threads": proc.num_threads(),
            "tcp": len(proc.net_connections(kind="tcp")),
            "children": len(kids := proc.children(recursive=True)),
            # The log relay's among them: a process of the server's, holding memory too.
            "children_mb": sum(_rss(k) for k in kids) // 2**20,
        }


def _rss(proc: psutil.Process) -> int:
    try:
        return int(proc.memory_info().rss)
    except psutil.Error:  # ended meanwhile (a job's supervisor)
        return 0


Deleter = Callable[[list[str]], Awaitable[None]]


async def prune(s: aiohttp.ClientSession, base: str, delete: Deleter) -> None:
    """Deletes the ended jobs beyond the newest :data:`KEEP`."""
    async with s.get(f"{base}/pai/api/jobs") as r:
        jobs = (await r.json())["items"]
    old = [j["id"] for j in jobs[KEEP:] if j["state"] in ("SUCCEEDED", "FAILED", "STOPPED")]
    if old:
        await delete(old)


async def soak(port: int, pid: int, minutes: int, delete: Deleter) -> None:
    base = f"http://127.0.0.1:{port}"
    proc = psutil.Process(pid)
    rows: list[dict[str, int]] = []
    background: set[Any] = set()
    print(
        f"{'min':>3} {'jobs':>5} {'rss MB':>6} {'fds':>5} {'thr':>4} {'tcp':>4} {'kids':>4}"
        f" {'kids MB':>7} {'reqs':>5} {'p99 ms':>7} {'errors':>6}",
        flush=True,
    )
    async with session(base, "cookie") as s:
        etag = [""]
        n = itertools.count()
        for minute in range(1, minutes + 1):
            m = Minute()
            until = time.monotonic() + 60
            while time.monotonic() < until:
                started = time.monotonic()
                await cycle(s, base, next(n), m, etag, background)
                await asyncio.sleep(max(0.0, 3.0 - (time.monotonic() - started)))
            await prune(s, base, delete)
            async with s.get(f"{base}/pai/api/jobs?limit=1") as r:
                total = (await r.json()).get("total", 0)
            row = held(proc)
            rows.append(row)
            p99 = stats(m.times)[1] if m.times else 0.0
            print(
                f"{minute:3} {total:5} {row['rss_mb']:6} {row['fds']:5} {row['threads']:4}"
                f" {row['tcp']:4} {row['children']:4} {row['children_mb']:7}"
                f" {len(m.times):5} {p99:7.1f} {m.errors:6}"
                + (f"  ({'; '.join(m.said)})" if m.said else ""),
                flush=True,
            )
        await asyncio.gather(*background, return_exceptions=True)
    if len(rows) >= 4:
        warm, last = rows[2], rows[-1]
        print(
            "after warm-up (minute 3 → last): "
            + ", ".join(f"{k} {warm[k]} → {last[k]}" for k in warm),
            flush=True,
        )


@contextlib.contextmanager
def kube_server(cluster_dir: str | None) -> Iterator[tuple[int, int, Deleter]]:
    from benchmarks.kube_cluster import cluster
    from tests.cluster import manifests

    with cluster(cluster_dir, gpu_nodes=False, runner=True, schedulers=False) as state:
        options = [
            "--PAIConfig.backend=kubernetes",
            f"--KubernetesBackend.kubeconfig={state.users['alice']}",
            "--KubernetesBackend.flavor=native",
            "--KubernetesBackend.user=alice",
            f"--KubernetesBackend.node_selector={{'{manifests.RUNNER_LABEL}': 'true'}}",
        ]
        kubeconfig = state.users["alice"]

        async def delete(ids: list[str]) -> None:
            from jupyter_pai.backends.kubernetes import KubernetesBackend

            b = KubernetesBackend(kubeconfig=kubeconfig, flavor="native", user="alice")
            await b.start()
            try:
                for job_id in ids:
                    with contextlib.suppress(Exception):
                        await b.delete_job(job_id)
            finally:
                await b.close()

        with local_server(options) as (port, pid, _):
            yield port, pid, delete


@contextlib.contextmanager
def local_server(options: list[str] | None = None) -> Iterator[tuple[int, int, Deleter]]:
    with tempfile.TemporaryDirectory(prefix="pai-soak-") as tmp:
        state, root = Path(tmp) / "state", Path(tmp) / "root"
        state.mkdir()
        root.mkdir()
        port = free_port()
        server = start_server(state, root, port, options or [])

        async def delete(ids: list[str]) -> None:
            from jupyter_pai.backends.local import LocalBackend

            b = LocalBackend(state_dir=str(state), gpu_slots=0, housekeeping=0)
            for job_id in ids:
                with contextlib.suppress(Exception):
                    await b.delete_job(job_id)

        try:
            yield port, server.pid, delete
        finally:
            server.terminate()
            server.wait(timeout=30)


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--backend", choices=("local", "kube"), default="local")
    ap.add_argument("--minutes", type=int, default=60)
    ap.add_argument("--cluster-dir", help="a running test cluster (tests.cluster up --dir)")
    args = ap.parse_args()
    # Stopped with SIGTERM, it still stops its server and cluster on the way out.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    server = kube_server(args.cluster_dir) if args.backend == "kube" else local_server()
    with server as (port, pid, delete):
        print(f"soak on the {args.backend} backend for {args.minutes} min", flush=True)
        asyncio.run(soak(port, pid, args.minutes, delete))


if __name__ == "__main__":
    main()
