"""Two processes submitting at once to one state directory never hand a GPU to two jobs at
the same time, and the server sees every job they submitted."""

from __future__ import annotations

import itertools
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from .pai import PY, PAIClient

JOBS_PER_PROCESS = 6

SUBMITTER = textwrap.dedent(
    """
    import asyncio, sys, time
    from pathlib import Path
    from jupyter_pai.backends.local import LocalBackend
    from jupyter_pai.spec import parse_job

    tag, workdir, ready, go, count, task = sys.argv[1:7]

    async def main():
        backend = LocalBackend(housekeeping=0, stop_grace_seconds=2)  # state dir, GPUs: env
        await backend.start()
        jobs = [
            parse_job({"name": f"{tag}-{i}", "image": "python:3.11", "gpus": 1, "command": task}).job
            for i in range(int(count))
        ]
        Path(ready).touch()
        deadline = time.monotonic() + 60
        while not Path(go).exists():
            assert time.monotonic() < deadline, "never told to go"
            time.sleep(0.002)
        await asyncio.gather(*(backend.submit(job, working_dir=workdir) for job in jobs))
        await backend.close()

    asyncio.run(main())
    """
)

TASK = (
    f'{PY} -c \'import os, time; g = os.environ["CUDA_VISIBLE_DEVICES"]; '
    'print("start", g, time.monotonic(), flush=True); time.sleep(0.3); '
    'print("end", g, time.monotonic(), flush=True)\''
)


def start_submitter(
    script: Path, tag: str, workdir: Path, ready: Path, go: Path
) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [
            sys.executable,
            str(script),
            tag,
            str(workdir),
            str(ready),
            str(go),
            str(JOBS_PER_PROCESS),
            TASK,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )


async def test_two_processes_submitting_at_once_never_double_book_a_gpu(
    pai: PAIClient, tmp_path: Path
) -> None:
    assert (await pai.get("info"))["gpuSlots"] == 4
    script = tmp_path / "submitter.py"
    script.write_text(SUBMITTER)
    go = tmp_path / "go"
    procs = [
        start_submitter(script, tag, pai.root_dir, tmp_path / f"ready-{tag}", go) for tag in "ab"
    ]
    try:

        async def both_ready() -> bool:
            for proc in procs:
                assert proc.poll() in (None, 0), proc.communicate()[0].decode()
            return all((tmp_path / f"ready-{tag}").exists() for tag in "ab")

        await pai.wait_for(both_ready, "both submitters to be ready")
        go.touch()

        async def both_done() -> bool:
            return all(proc.poll() is not None for proc in procs)

        await pai.wait_for(both_done, "both submitters to finish")
        for proc in procs:
            assert proc.returncode == 0, proc.communicate()[0].decode()
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()

    total = 2 * JOBS_PER_PROCESS

    async def all_ended() -> list[dict] | None:
        jobs = await pai.jobs()
        assert len(jobs) == total, [j["id"] for j in jobs]
        return jobs if all(j["state"] in ("SUCCEEDED", "FAILED", "STOPPED") for j in jobs) else None

    started = time.monotonic()
    jobs = await pai.wait_for(all_ended, "all jobs to end", timeout=120)
    assert {j["state"] for j in jobs} == {"SUCCEEDED"}, [
        (j["id"], j["state"], j["subState"]) for j in jobs
    ]
    assert sorted(j["name"] for j in jobs) == sorted(
        f"{t}-{i}" for t in "ab" for i in range(JOBS_PER_PROCESS)
    )

    intervals: dict[str, list[tuple[float, float, str]]] = {}
    for job in jobs:
        detail = await pai.job(job["id"])
        (task,) = detail["tasks"]
        (gpu,) = task["gpus"]
        log = (await pai.log(job["id"], "worker", 0)).split()
        assert log[0] == "start" and log[3] == "end", log
        assert log[1] == log[4] == gpu, (log, gpu)
        intervals.setdefault(gpu, []).append((float(log[2]), float(log[5]), job["id"]))

    for gpu, spans in intervals.items():
        spans.sort()
        for (_, end, first), (begin, _, second) in itertools.pairwise(spans):
            assert begin >= end, (
                f"GPU {gpu}: {second} started at {begin} before {first} ended at {end}"
            )
    assert set(intervals) <= {"0", "1", "2", "3"}
    # The jobs did share the machine: more than one GPU was in use.
    assert len(intervals) >= 2, intervals
    print(f"{total} jobs ran in {time.monotonic() - started:.1f}s")
