"""Time from submission to all tasks running, for an 8-instance job on the local backend,
against starting the same 8 processes directly (the baseline), side by side.

"Running" means the task's own command has begun: each task records the wall-clock time
at which its first line executes, so both sides are measured at the same point.

    python benchmarks/local_launch.py [--instances 8] [--runs 5]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from jupyter_pai.backends.local import LocalBackend
from jupyter_pai.spec import parse_job

# A bash builtin writes the time, so neither side pays for starting another interpreter.
STAMP = 'printf %s "$EPOCHREALTIME" > "$STAMP_DIR/$RANK"'


def wait_for_stamps(folder: Path, count: int, timeout: float = 60.0) -> float:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        files = list(folder.iterdir())
        if len(files) == count and all(f.stat().st_size > 0 for f in files):
            return max(float(f.read_text()) for f in files)
        time.sleep(0.005)
    raise TimeoutError(f"only {len(list(folder.iterdir()))} of {count} tasks started")


def direct(instances: int, work: Path) -> float:
    stamps = work / f"direct-{time.monotonic_ns()}"
    stamps.mkdir()
    t0 = time.time()
    procs = [
        subprocess.Popen(
            ["bash", "-c", STAMP],
            env={**os.environ, "STAMP_DIR": str(stamps), "RANK": str(i)},
            start_new_session=True,
        )
        for i in range(instances)
    ]
    last = wait_for_stamps(stamps, instances)
    for p in procs:
        p.wait()
    return last - t0


async def through_backend(backend: LocalBackend, instances: int, work: Path, n: int) -> float:
    stamps = work / f"pai-{n}"
    stamps.mkdir()
    job = parse_job(
        {
            "name": f"bench-{n}",
            "instances": instances,
            "gpus": 1,
            "command": f"export STAMP_DIR={stamps}; {STAMP}",
        }
    ).job
    t0 = time.time()
    submitted = await backend.submit(job)
    last = await asyncio.to_thread(wait_for_stamps, stamps, instances)
    while not (await backend.get_job(submitted.id)).state.terminal:  # noqa: ASYNC110 - polls a file-backed state
        await asyncio.sleep(0.05)
    return last - t0


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--instances", type=int, default=8)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        # As in the Jupyter server: long-lived, so supervisors fork from its warm launcher.
        backend = LocalBackend(state_dir=str(work / "state"), gpu_slots=args.instances)
        await backend.start()
        direct_times, pai_times = [], []
        for n in range(args.runs):
            direct_times.append(direct(args.instances, work))
            pai_times.append(await through_backend(backend, args.instances, work, n))
        await backend.close()
    d, p = statistics.median(direct_times), statistics.median(pai_times)
    print(f"local launch, {args.instances} instances, {args.runs} runs (median, min..max)")
    print(
        f"  direct processes : {d * 1000:8.1f} ms  ({min(direct_times) * 1000:.1f}..{max(direct_times) * 1000:.1f})"
    )
    print(
        f"  jupyter-pai local: {p * 1000:8.1f} ms  ({min(pai_times) * 1000:.1f}..{max(pai_times) * 1000:.1f})"
    )
    print(f"  ratio pai/direct : {p / d:8.2f}x  (+{(p - d) * 1000:.1f} ms)")


if __name__ == "__main__":
    asyncio.run(main())
