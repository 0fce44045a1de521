"""Load on a real Jupyter server (local backend, 5,000 seeded jobs): 50 clients listing
(``GET jobs?limit=50`` with ``If-None-Match``) and reading job detail, 20 clients reading
logs, for ``--seconds``; per kind count, p50, p99 and errors; the server's CPU seconds and
peak RSS; ratios to the goals (p99 ≤ 200 ms, 0 errors, RSS ≤ 200 MB).

    python benchmarks/load.py [--jobs 5000] [--seconds 60]

Seeded jobs have all ended, so log clients read ended jobs' logs (``tail=100``, no follow):
a 404 for a log never written counts as an answer, only 5xx and transport failures count
as errors. The Kubernetes backend is not measured here (not done)."""

from __future__ import annotations

import argparse
import asyncio
import random
import tempfile
import time
from pathlib import Path

import aiohttp
import psutil

from benchmarks.list_jobs import TOKEN, free_port, seed, start_server, stats

GOAL_P99_MS, GOAL_RSS_MB = 200.0, 200.0


async def client(
    kind: str,
    base: str,
    ids: list[str],
    until: float,
    out: dict[str, list[float]],
    errs: dict[str, int],
) -> None:
    headers = {"Authorization": f"token {TOKEN}"}
    etag = ""
    async with aiohttp.ClientSession(headers=headers) as s:
        while time.monotonic() < until:
            if kind == "list":
                url, h = f"{base}/pai/api/jobs?limit=50", {"If-None-Match": etag} if etag else {}
            elif kind == "detail":
                url, h = f"{base}/pai/api/jobs/{random.choice(ids)}", {}
            else:
                url, h = f"{base}/pai/api/jobs/{random.choice(ids)}/logs?role=worker&tail=100", {}
            t = time.perf_counter()
            try:
                async with s.get(url, headers=h) as r:
                    await r.read()
                    if kind == "list" and r.status == 200:
                        etag = r.headers.get("ETag", "")
                    if r.status >= 500 or (kind != "logs" and r.status not in (200, 304)):
                        errs[kind] += 1
            except aiohttp.ClientError:
                errs[kind] += 1
            out[kind].append(time.perf_counter() - t)


async def run(port: int, pid: int, jobs: int, seconds: float) -> None:
    base = f"http://127.0.0.1:{port}"
    ids = [f"user{i % 50}~job-{i:05d}" for i in range(jobs)]
    out: dict[str, list[float]] = {"list": [], "detail": [], "logs": []}
    errs = dict.fromkeys(out, 0)
    proc = psutil.Process(pid)
    cpu0 = sum(proc.cpu_times()[:2])
    until = time.monotonic() + seconds
    kinds = ["list"] * 25 + ["detail"] * 25 + ["logs"] * 20
    tasks = [asyncio.create_task(client(k, base, ids, until, out, errs)) for k in kinds]
    peak = 0
    while not all(t.done() for t in tasks):
        peak = max(peak, proc.memory_info().rss)
        await asyncio.sleep(0.5)
    await asyncio.gather(*tasks)
    cpu = sum(proc.cpu_times()[:2]) - cpu0
    print(f"{'kind':8} {'count':>7} {'p50 ms':>8} {'p99 ms':>8} {'errors':>6}  p99/goal")
    for k, times in out.items():
        p50, p99 = stats(times) if times else (0.0, 0.0)
        print(f"{k:8} {len(times):7} {p50:8.1f} {p99:8.1f} {errs[k]:6}  {p99 / GOAL_P99_MS:.2f}")
    rss = peak / 2**20
    print(
        f"server CPU {cpu:.1f} s in {seconds:.0f} s; peak RSS {rss:.0f} MB ({rss / GOAL_RSS_MB:.2f} of goal)"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=5000)
    ap.add_argument("--seconds", type=float, default=60.0)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="pai-load-bench-") as tmp:
        state, root = Path(tmp) / "state", Path(tmp) / "root"
        root.mkdir()
        seed(state, args.jobs)
        port = free_port()
        server = start_server(state, root, port)
        try:
            asyncio.run(run(port, server.pid, args.jobs, args.seconds))
        finally:
            server.terminate()
            server.wait(timeout=30)


if __name__ == "__main__":
    main()
