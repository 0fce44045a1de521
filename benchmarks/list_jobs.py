"""``GET jobs`` at scale on the local backend, through a real Jupyter server: the whole list
vs one page (``limit=50``) vs a conditional request answered 304, and one page right after
a job changed (the listing read again), median and p99 over N rounds.

    python benchmarks/list_jobs.py [--jobs 5000] [--rounds 200]

Jobs are seeded as ended records straight into a fresh state directory, written by the
backend's own ``StateStore`` (what a submission leaves once the job ended), so seeding
takes seconds and no process runs. Times are client round trips over one keep-alive
connection on 127.0.0.1 (server time plus a little HTTP). Goals: page ≤ 10 ms, 304 ≤ 2 ms."""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path

from jupyter_pai.backends.local.records import JobRecord, TaskRecord
from jupyter_pai.backends.local.store import StateStore
from jupyter_pai.backends.models import JobState, TaskState

TOKEN = "list-jobs-benchmark"
ENDED = [JobState.SUCCEEDED, JobState.FAILED, JobState.STOPPED]


def seed_spec(name: str, gpu: int) -> dict[str, object]:
    """The protocol v2 spec a seeded job was submitted with (what ``GET jobs/{id}`` reads)."""
    return {
        "protocolVersion": 2,
        "name": name,
        "type": "job",
        "taskRoles": {
            "worker": {
                "instances": 2,
                "resourcePerInstance": {"cpu": 1, "memoryMB": 256, "gpu": gpu},
                "commands": ["python train.py"],
            }
        },
    }


def seed(state_dir: Path, count: int, log_lines: int = 0, logged: int = 0) -> None:
    """``count`` ended jobs of 50 users; the first ``logged`` have task logs of
    ``log_lines`` lines."""
    store = StateStore(state_dir)
    t0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
    for i in range(count):
        user = f"user{i % 50}"
        state = ENDED[i % 3]
        when = t0 + timedelta(seconds=37 * i)
        rec = JobRecord(
            id=f"{user}~job-{i:05d}",
            name=f"job-{i:05d}",
            user=user,
            virtual_cluster=("default", "research")[i % 2],
            state=state,
            submission_time=when,
            launched_time=when + timedelta(seconds=3),
            completed_time=when + timedelta(seconds=60),
            exit_code=0 if state is JobState.SUCCEEDED else 1,
            total_gpus=2 * (i % 2),
            total_tasks=2,
            total_roles=1,
            working_dir=str(state_dir),
            tasks=[
                TaskRecord(role="worker", index=k, state=TaskState(state.value), exit_code=0)
                for k in range(2)
            ],
        )
        store.create_job(rec, seed_spec(rec.name, i % 2))
        if i < logged:
            text = "".join(f"step {n}: loss {1 / (n + 1):.4f}\n" for n in range(log_lines))
            for k in range(2):
                path = store.log_path(rec.id, "worker", k)
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def start_server(
    state_dir: Path, root: Path, port: int, options: Sequence[str] = ()
) -> subprocess.Popen[bytes]:
    """A Jupyter server with jupyter-pai, on the local backend over ``state_dir`` unless
    ``options`` (more command-line settings) say otherwise; its log goes beside it."""
    env = dict(os.environ, JUPYTER_PAI_STATE_DIR=str(state_dir), JUPYTER_PAI_LOCAL_GPUS="4")
    env.pop("JUPYTER_PAI_BACKEND", None)
    cmd = [
        sys.executable,
        "-m",
        "jupyter_server",
        f"--ServerApp.port={port}",
        "--ServerApp.ip=127.0.0.1",
        f"--IdentityProvider.token={TOKEN}",
        f"--ServerApp.root_dir={root}",
        "--ServerApp.open_browser=False",
        "--ServerApp.jpserver_extensions={'jupyter_pai': True}",
        "--ServerApp.log_level=WARN",
        "--allow-root",
        *options,
    ]
    # Its log goes to a file: a pipe nobody reads fills up under load (a warning per 404)
    # and then blocks the server.
    log = state_dir.parent / "server.log"
    with log.open("wb") as sink:
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=sink)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            conn.request("GET", "/api/status", headers={"Authorization": f"token {TOKEN}"})
            if conn.getresponse().status == 200:
                return proc
        except OSError:
            time.sleep(0.2)
    proc.kill()
    proc.wait()
    raise SystemExit(f"the Jupyter server did not start: {log.read_text()[-2000:]}")


class Client:
    def __init__(self, port: int) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)

    def get(self, query: str, etag: str | None = None) -> tuple[float, int, bytes, str]:
        headers = {"Authorization": f"token {TOKEN}"}
        if etag:
            headers["If-None-Match"] = etag
        start = time.perf_counter()
        self.conn.request("GET", "/pai/api/jobs" + query, headers=headers)
        r = self.conn.getresponse()
        body = r.read()
        return time.perf_counter() - start, r.status, body, r.getheader("ETag") or ""


def stats(times: list[float]) -> tuple[float, float]:
    ordered = sorted(times)
    p99 = ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]
    return statistics.median(ordered) * 1000, p99 * 1000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=5000)
    ap.add_argument("--rounds", type=int, default=200)
    args = ap.parse_args()

    with seeded_server(args.jobs) as (state, port, _):
        run(Client(port), state, args.jobs, args.rounds)


@contextlib.contextmanager
def seeded_server(
    jobs: int, log_lines: int = 0, logged: int = 0, options: Sequence[str] = ()
) -> Iterator[tuple[Path, int, subprocess.Popen[bytes]]]:
    """A real Jupyter server on the local backend over a fresh state directory seeded with
    ``jobs`` ended jobs (:func:`seed`): (state directory, port, server process)."""
    with tempfile.TemporaryDirectory(prefix="pai-bench-") as tmp:
        state, root = Path(tmp) / "state", Path(tmp) / "root"
        root.mkdir()
        t = time.perf_counter()
        seed(state, jobs, log_lines=log_lines, logged=logged)
        print(f"seeded {jobs} job records in {time.perf_counter() - t:.1f} s")
        port = free_port()
        server = start_server(state, root, port, options)
        try:
            yield state, port, server
        finally:
            server.terminate()
            server.wait(timeout=30)


def run(client: Client, state: Path, count: int, rounds: int) -> None:
    _, status, body, _ = client.get("")  # warm-up: the first listing reads every record
    whole = json.loads(body)
    assert status == 200 and len(whole["items"]) == whole["total"] == count, (status, whole)
    _, status, body, etag = client.get("?limit=50")
    page = json.loads(body)
    assert status == 200 and len(page["items"]) == 50 and page["continue"], page
    assert page["items"] == whole["items"][:50]

    full = [client.get("")[0] for _ in range(max(10, rounds // 10))]
    paged = [client.get("?limit=50")[0] for _ in range(rounds)]
    unchanged = []
    for _ in range(rounds):
        took, status, body, _ = client.get("?limit=50", etag)
        assert status == 304 and body == b"", status
        unchanged.append(took)

    # After a change (another process writes one record): the listing is read again.
    store = StateStore(state)
    first = whole["items"][0]["id"]
    changed = []
    for i in range(max(10, rounds // 10)):
        rec = store.read_job(first)
        rec.retries = i + 1
        store.write_job(rec)
        took, status, body, new_etag = client.get("?limit=50", etag)
        assert status == 200 and new_etag != etag, status
        assert json.loads(body)["items"][0]["retries"] == i + 1
        etag = new_etag
        changed.append(took)

    base, _ = stats(full)
    print(f"\nGET jobs at {count} jobs, local backend, real Jupyter server ({rounds} rounds):")
    print(f"  {'request':<34}{'median ms':>10}{'p99 ms':>10}{'vs full':>10}")
    for name, times in [
        ("full list (no limit)", full),
        ("one page (limit=50)", paged),
        ("304 (If-None-Match, limit=50)", unchanged),
        ("one page after a job changed", changed),
    ]:
        median, p99 = stats(times)
        print(f"  {name:<34}{median:>10.2f}{p99:>10.2f}{base / median:>9.1f}x")
    page_median, _ = stats(paged)
    not_modified, _ = stats(unchanged)
    after_change, _ = stats(changed)
    goals = [
        ("page", page_median, 3.0),
        ("304", not_modified, 1.0),
        ("page after a change", after_change, 5.0),
    ]
    print(
        "\ngoals (medians): "
        + "; ".join(
            f"{name} ≤ {goal:g} ms: {'met' if took <= goal else 'NOT met'} ({took:.2f}, "
            f"{took / goal:.2f} of the goal)"
            for name, took, goal in goals
        )
    )


if __name__ == "__main__":
    main()
