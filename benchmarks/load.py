"""Load on a real Jupyter server (local backend, 5,000 seeded jobs of 50 users): 50 clients
listing (``GET jobs?limit=50`` with ``If-None-Match``, as the panel polls) and reading job
detail (``GET jobs/{id}``), 20 clients reading logs (``tail=100`` of an ended job's task,
one of 200 whose logs have 1,000 lines), and 20 clients following the logs of running jobs
(``follow=true``, open for the whole run), for ``--seconds``. They authenticate as a
browser does, by the login cookie (``--auth token``: the token on every request). Per
kind: count, p50 and p99 latency (for followers: the time to the first bytes), errors;
the server's CPU seconds and peak RSS; ratios to the goals (p99 ≤ 100 ms, 0 errors,
RSS ≤ 200 MB). ``--python-gc``: Python's own collector thresholds instead of the
extension's (``c.PAIConfig.gc_thresholds``), to compare the two.

    python -m benchmarks.load [--jobs 5000] [--seconds 60] [--auth cookie|token]

The seeded jobs are ended records written by the backend's own store (see
``benchmarks/list_jobs.py``); the followed jobs are real: 4 two-task jobs submitted over
REST that print a line every 50 ms. ``benchmarks/kube_load.py``: the same clients against the
Kubernetes backend on the test cluster."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import random
import time
from collections import defaultdict
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import aiohttp
import psutil

from benchmarks.list_jobs import TOKEN, seeded_server, stats

GOAL_P99_MS, GOAL_RSS_MB = 100.0, 200.0
AUTH = {"Authorization": f"token {TOKEN}"}
LOGGED = 200  # seeded jobs with logs (1,000 lines per task)
LISTERS, READERS, LOG_READERS, FOLLOWERS, FOLLOWED_JOBS = 25, 25, 20, 20, 4
TICKER = "i=0; while true; do echo tick $i; i=$((i+1)); sleep 0.05; done"


class Tally:
    def __init__(self) -> None:
        self.times: dict[str, list[float]] = defaultdict(list)
        self.errors: dict[str, int] = defaultdict(int)
        self.followed_bytes = 0


@dataclass
class Mix:
    """What the clients ask for: jobs to list and read (``ids``), jobs whose first worker's
    log has 1,000 lines (``logged``, read by ``tail=100``), and running two-worker jobs whose
    logs are followed (``followed``)."""

    ids: list[str]
    logged: list[str]
    followed: list[str]


async def poll(
    kind: str, s: aiohttp.ClientSession, base: str, mix: Mix, until: float, t: Tally
) -> None:
    etag = ""
    while time.monotonic() < until:
        headers = {}
        if kind == "list":
            url = f"{base}/pai/api/jobs?limit=50"
            headers = {"If-None-Match": etag} if etag else {}
        elif kind == "detail":
            url = f"{base}/pai/api/jobs/{random.choice(mix.ids)}"
        else:
            job_id = random.choice(mix.logged)
            url = f"{base}/pai/api/jobs/{job_id}/logs?role=worker&index=0&tail=100"
        start = time.perf_counter()
        try:
            async with s.get(url, headers=headers) as r:
                await r.read()
                if kind == "list" and r.status == 200:
                    etag = r.headers.get("ETag", "")
                if r.status not in (200, 304):
                    t.errors[kind] += 1
        except aiohttp.ClientError:
            t.errors[kind] += 1
        t.times[kind].append(time.perf_counter() - start)


async def follow(
    s: aiohttp.ClientSession, base: str, job_id: str, index: int, until: float, t: Tally
) -> None:
    url = f"{base}/pai/api/jobs/{job_id}/logs?role=worker&index={index}&follow=true"
    start = time.perf_counter()
    try:
        async with s.get(url, timeout=aiohttp.ClientTimeout(total=None)) as r:
            if r.status != 200:
                t.errors["follow"] += 1
                return
            first = True
            while time.monotonic() < until:
                try:
                    chunk = await asyncio.wait_for(r.content.readany(), until - time.monotonic())
                except asyncio.TimeoutError:
                    break
                if not chunk:
                    t.errors["follow"] += 1  # the stream ended while the job runs
                    break
                if first:
                    t.times["follow"].append(time.perf_counter() - start)
                    first = False
                t.followed_bytes += len(chunk)
    except (aiohttp.ClientError, asyncio.TimeoutError):
        t.errors["follow"] += 1


@contextlib.asynccontextmanager
async def session(base: str, auth: str) -> AsyncIterator[aiohttp.ClientSession]:
    """A client session logged in as ``auth`` says. "cookie": as a browser's panel does, the
    token once, then the server's login cookie (the jar must take a cookie from an IP
    address). "token": the token on every request, as a script does; Jupyter Server then
    makes a user and signs a cookie each time."""
    connector = aiohttp.TCPConnector(limit=0)
    jar = aiohttp.CookieJar(unsafe=True)
    headers = AUTH if auth == "token" else {}
    async with aiohttp.ClientSession(headers=headers, connector=connector, cookie_jar=jar) as s:
        async with s.get(f"{base}/pai/api/info", headers=AUTH) as r:
            assert r.status == 200, await r.text()
        yield s


async def submit(s: aiohttp.ClientSession, base: str, bodies: list[dict[str, Any]]) -> list[str]:
    """Submit the jobs over REST; their ids."""
    ids = []
    for body in bodies:
        async with s.post(f"{base}/pai/api/jobs", json=body, headers=AUTH) as r:
            assert r.status in (200, 201), await r.text()
            ids.append((await r.json())["job"]["id"])
    return ids


async def wait_for(
    s: aiohttp.ClientSession, base: str, ids: list[str], states: set[str], timeout: float
) -> None:
    deadline = time.monotonic() + timeout
    for job_id in ids:
        while True:
            async with s.get(f"{base}/pai/api/jobs/{job_id}") as r:
                state = (await r.json())["state"]
            if state in states:
                break
            if time.monotonic() > deadline:
                raise SystemExit(f"job {job_id} is {state}, not {'/'.join(states)}")
            await asyncio.sleep(0.1)


def tickers(run: str = "") -> list[dict[str, Any]]:
    """The followed jobs: two workers each, printing a line every 50 ms; ``run`` tells one
    run's names from another's on a cluster that keeps them."""
    return [
        {"name": f"ticker-{run}{n}", "instances": 2, "command": TICKER}
        for n in range(FOLLOWED_JOBS)
    ]


async def measure(
    s: aiohttp.ClientSession,
    base: str,
    pid: int,
    mix: Mix,
    seconds: float,
    title: str,
    rss_goal_mb: float = GOAL_RSS_MB,
) -> None:
    """Run the clients for ``seconds`` and print the figures."""
    t = Tally()
    proc = psutil.Process(pid)
    cpu0 = sum(proc.cpu_times()[:2])
    until = time.monotonic() + seconds
    kinds = ["list"] * LISTERS + ["detail"] * READERS + ["logs"] * LOG_READERS
    tasks = [asyncio.create_task(poll(k, s, base, mix, until, t)) for k in kinds]
    tasks += [
        asyncio.create_task(
            follow(
                s, base, mix.followed[n % len(mix.followed)], n // len(mix.followed) % 2, until, t
            )
        )
        for n in range(FOLLOWERS)
    ]
    peak = 0
    while not all(task.done() for task in tasks):
        peak = max(peak, proc.memory_info().rss)
        await asyncio.sleep(0.5)
    await asyncio.gather(*tasks)
    cpu = sum(proc.cpu_times()[:2]) - cpu0
    print(title)
    print(f"{'kind':8} {'count':>7} {'p50 ms':>8} {'p99 ms':>8} {'errors':>6}  p99/goal")
    for kind in ("list", "detail", "logs", "follow"):
        times = t.times[kind]
        p50, p99 = stats(times) if times else (0.0, 0.0)
        print(
            f"{kind:8} {len(times):7} {p50:8.1f} {p99:8.1f} {t.errors[kind]:6}  {p99 / GOAL_P99_MS:.2f}"
        )
    print(f"followers received {t.followed_bytes / 1024:.0f} KiB")
    rss = peak / 2**20
    print(
        f"server CPU {cpu:.1f} s in {seconds:.0f} s ({cpu / seconds:.2f} cores); "
        f"peak RSS {rss:.0f} MB ({rss / rss_goal_mb:.2f} of the {rss_goal_mb:.0f} MB goal)"
    )


async def run(port: int, pid: int, jobs: int, seconds: float, auth: str = "cookie") -> None:
    base = f"http://127.0.0.1:{port}"
    ids = [f"user{i % 50}~job-{i:05d}" for i in range(jobs)]
    async with session(base, auth) as s:
        followed = await submit(s, base, tickers())
        await wait_for(s, base, followed, {"RUNNING"}, 30)
        title = (
            f"{jobs} jobs, {seconds:.0f} s, {LISTERS + READERS + LOG_READERS} polling clients"
            f" + {FOLLOWERS} followers, authenticated by {auth}"
        )
        await measure(s, base, pid, Mix(ids, ids[:LOGGED], followed), seconds, title)
        for job_id in followed:
            async with s.delete(f"{base}/pai/api/jobs/{job_id}", headers=AUTH) as r:
                await r.read()


def auth_option(ap: argparse.ArgumentParser) -> None:
    ap.add_argument(
        "--auth",
        choices=("cookie", "token"),
        default="cookie",
        help="how the clients authenticate: a login cookie as a browser, or the token on every request",
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--jobs", type=int, default=5000)
    ap.add_argument("--seconds", type=float, default=60.0)
    auth_option(ap)
    ap.add_argument(
        "--python-gc",
        action="store_true",
        help="Python's own collector thresholds, not the extension's (c.PAIConfig.gc_thresholds)",
    )
    args = ap.parse_args()
    options = ["--PAIConfig.gc_thresholds=[]"] if args.python_gc else []
    print(f"collector thresholds: {'Python' if args.python_gc else 'the extension'}'s")
    with seeded_server(args.jobs, log_lines=1000, logged=LOGGED, options=options) as (
        _,
        port,
        server,
    ):
        asyncio.run(run(port, server.pid, args.jobs, args.seconds, args.auth))


if __name__ == "__main__":
    main()
