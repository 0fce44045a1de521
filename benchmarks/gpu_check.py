"""The local backend on a machine with real NVIDIA GPUs: four checks, each with its figures,
then a summary table. Run it from the repository root on a GPU machine:

    python benchmarks/gpu_check.py [--timeout 180] [--load-seconds 15]

1. isolation: two 1-GPU tasks submitted together get disjoint GPUs; each sees exactly one
   through CUDA, a different UUID, the one of the job detail's ``gpus`` for that task.
2. kernel: a ``pai`` kernel (1 GPU) sees one GPU, the one its job holds; its start time.
3. ddp: ``%%pai run`` with 2 instances x 1 GPU runs torch.distributed over NCCL from the
   environment the backend sets: an all_reduce's result, a 256 MB all_reduce's bandwidth.
4. utilisation: while a task loads its GPU (torch matmuls), ``backend.utilisation`` and
   NVML read directly, side by side.

``nvidia-smi`` and NVML list every GPU whatever ``CUDA_VISIBLE_DEVICES`` says, so what a
task "sees" is what CUDA enumerates (the driver API through ctypes, no torch needed);
their listings are printed as well, and map each UUID to its NVML index.

Exit status: 0 every check passed; 1 one failed or could not run (no torch with CUDA, too
few GPUs); 2 no NVIDIA GPU here (nvidia-smi missing or NVML does not start): nothing run.
Each check runs in a fresh ``JUPYTER_PAI_STATE_DIR`` with the GPUs the backend detects.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from jupyter_pai.backends.local import LocalBackend  # noqa: E402
from jupyter_pai.backends.models import JobDetail  # noqa: E402
from jupyter_pai.notebook.cellrun import cell_command  # noqa: E402
from jupyter_pai.spec import parse_job  # noqa: E402

PREFIX = "GPUCHECK "

# What a process sees: CUDA's devices (which honours CUDA_VISIBLE_DEVICES), and nvidia-smi's
# and NVML's listings (which do not). One JSON line; also a file where GPUCHECK_DIR is set.
PROBE = r"""
import ctypes, json, os, subprocess

def cuda_uuids():
    try:
        lib = ctypes.CDLL("libcuda.so.1")
    except OSError as error:
        return f"libcuda not loadable: {error}"
    rc = lib.cuInit(0)
    if rc == 100:  # CUDA_ERROR_NO_DEVICE: CUDA_VISIBLE_DEVICES hides every GPU
        return []
    if rc:
        return f"cuInit failed with CUresult {rc}"
    count = ctypes.c_int()
    lib.cuDeviceGetCount(ctypes.byref(count))
    uuids = []
    for i in range(count.value):
        dev = ctypes.c_int()
        lib.cuDeviceGet(ctypes.byref(dev), i)
        raw = (ctypes.c_ubyte * 16)()
        lib.cuDeviceGetUuid(raw, dev)
        h = bytes(raw).hex()
        uuids.append(f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}")
    return uuids

def smi():
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=index,uuid,name", "--format=csv,noheader"],
            capture_output=True, text=True, timeout=30, check=True,
        ).stdout
    except Exception as error:
        return f"nvidia-smi failed: {error}"
    return [line.strip() for line in out.splitlines() if line.strip()]

def nvml():
    try:
        import pynvml
    except ImportError:
        return "pynvml not importable"
    try:
        pynvml.nvmlInit()
        try:
            n = pynvml.nvmlDeviceGetCount()
            return [str(pynvml.nvmlDeviceGetUUID(pynvml.nvmlDeviceGetHandleByIndex(i))) for i in range(n)]
        finally:
            pynvml.nvmlShutdown()
    except Exception as error:
        return f"NVML failed: {error}"

seen = {
    "rank": os.environ.get("RANK"),
    "cvd": os.environ.get("CUDA_VISIBLE_DEVICES"),
    "cuda": cuda_uuids(),
    "smi": smi(),
    "nvml": nvml(),
}
line = json.dumps(seen)
print("GPUCHECK " + line, flush=True)
if os.environ.get("GPUCHECK_DIR"):
    with open(os.path.join(os.environ["GPUCHECK_DIR"], f"probe-{seen['rank']}.json"), "w") as f:
        f.write(line)
"""

# torch.distributed from the backend's variables (env:// reads MASTER_ADDR, MASTER_PORT,
# WORLD_SIZE, RANK); each task is pinned to one GPU, so its device is LOCAL_RANK (0).
DDP_CELL = r"""
import os, time
from datetime import timedelta
import torch
import torch.distributed as dist

rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
dist.init_process_group("nccl", timeout=timedelta(seconds=90))
t = torch.full((1,), float(rank + 1), device="cuda")
dist.all_reduce(t)
print(f"RESULT rank={rank} world={world} sum={t.item():g} expected={world * (world + 1) / 2:g}")
big = torch.ones(64 * 1024 * 1024, device="cuda")  # 256 MB of float32
dist.all_reduce(big)  # warm-up: NCCL sets up its rings on the first large call
torch.cuda.synchronize()
dist.barrier()
rounds = 10
t0 = time.perf_counter()
for _ in range(rounds):
    dist.all_reduce(big)
torch.cuda.synchronize()
took = (time.perf_counter() - t0) / rounds
alg = big.numel() * 4 / took / 1e9
print(f"BW rank={rank} ms={took * 1000:.2f} algbw={alg:.1f} busbw={alg * 2 * (world - 1) / world:.1f}")
dist.destroy_process_group()
"""

# Keeps its GPU busy for LOAD_SECONDS; a file says when the load has begun.
LOAD = r"""
import os, pathlib, time
import torch

a = torch.randn(8192, 8192, device="cuda")
b = torch.randn(8192, 8192, device="cuda")
(a @ b).sum().item()
pathlib.Path(os.environ["GPUCHECK_DIR"], "load.started").touch()
end = time.monotonic() + float(os.environ["LOAD_SECONDS"])
while time.monotonic() < end:
    for _ in range(20):
        c = a @ b
    torch.cuda.synchronize()
print("load done", flush=True)
"""


@dataclass
class Result:
    check: str
    result: str = "not run"  # "passed", "failed", "not run"
    figures: list[str] = field(default_factory=list)

    def note(self, line: str) -> None:
        self.figures.append(line)
        print(f"  {line}", flush=True)


@dataclass
class Context:
    backend: LocalBackend
    work: Path
    gpus: list[tuple[str, str, str]]  # (NVML index, UUID, name) from nvidia-smi
    timeout: float
    load_seconds: float
    step: str = ""

    def index_of(self, uuid: str) -> str | None:
        return next((i for i, u, _ in self.gpus if u == uuid), None)


def run(argv: list[str], timeout: float = 30) -> str:
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=True).stdout


def find_gpus() -> tuple[list[tuple[str, str, str]], str | None]:
    """This machine's GPUs per nvidia-smi, or why there are none."""
    if shutil.which("nvidia-smi") is None:
        return [], "nvidia-smi is not on PATH"
    try:
        import pynvml

        pynvml.nvmlInit()
        pynvml.nvmlShutdown()
    except ImportError:
        pass  # nvidia-smi alone decides; the backend's own NVML reading is checked in 4
    except Exception as error:
        return [], f"NVML does not start ({type(error).__name__}: {error})"
    try:
        out = run(["nvidia-smi", "--query-gpu=index,uuid,name", "--format=csv,noheader"])
    except (OSError, subprocess.SubprocessError) as error:
        return [], f"nvidia-smi failed ({error})"
    rows = [tuple(c.strip() for c in line.split(",", 2)) for line in out.splitlines()]
    gpus = [(r[0], r[1], r[2]) for r in rows if len(r) == 3]
    return gpus, None if gpus else "nvidia-smi lists no GPU"


def torch_cuda() -> str | None:
    """None where this interpreter (the one tasks run) has torch with CUDA; else why not."""
    code = "import torch; print(torch.__version__, torch.cuda.is_available(), torch.cuda.device_count())"
    try:
        out = run([sys.executable, "-c", code], timeout=120).split()
    except subprocess.CalledProcessError as error:
        return f"torch is not importable ({(error.stderr.strip().splitlines() or ['?'])[-1]})"
    except subprocess.TimeoutExpired:
        return "importing torch took over 120 s"
    if out[1:2] != ["True"]:
        return f"torch {out[0]} has no CUDA here (cuda.is_available() is {out[1:2]})"
    return None


async def wait_for(ctx: Context, step: str, ready: Callable[[], Awaitable[bool]]) -> None:
    ctx.step = step
    while not await ready():  # noqa: ASYNC110 - polls file-backed job state
        await asyncio.sleep(0.2)


async def submit(ctx: Context, job: dict[str, Any]) -> JobDetail:
    ctx.step = f"submitting {job['name']}"
    return await ctx.backend.submit(parse_job(job).job)


async def ended(ctx: Context, job_id: str) -> JobDetail:
    detail = await ctx.backend.get_job(job_id)

    async def done() -> bool:
        nonlocal detail
        detail = await ctx.backend.get_job(job_id)
        return detail.state.terminal

    await wait_for(ctx, f"waiting for {job_id} to end", done)
    return detail


def describe(ctx: Context, seen: dict[str, Any]) -> str:
    cuda = seen["cuda"]
    named = (
        [f"{u} (NVML index {ctx.index_of(u)})" for u in cuda] if isinstance(cuda, list) else cuda
    )
    listed = {
        k: len(v) if isinstance(v, list) else v
        for k, v in (("nvidia-smi", seen["smi"]), ("NVML", seen["nvml"]))
    }
    return f"CUDA_VISIBLE_DEVICES={seen['cvd']!r}; CUDA sees {named}; listed by {listed}"


def matches(ctx: Context, seen: dict[str, Any], gpus: list[str]) -> str | None:
    """None where the process saw exactly one GPU through CUDA, the one ``gpus`` names."""
    cuda = seen["cuda"]
    if not isinstance(cuda, list) or len(cuda) != 1:
        return f"CUDA sees {cuda}, not exactly one GPU"
    if [ctx.index_of(cuda[0])] != gpus:
        return f"CUDA's GPU is NVML index {ctx.index_of(cuda[0])}, the job detail says {gpus}"
    return None


async def check_isolation(ctx: Context, res: Result) -> None:
    if len(ctx.backend.slots) < 2:
        res.note(f"needs 2 GPUs, the backend has {len(ctx.backend.slots)}")
        return
    folder = ctx.work / "isolation"
    folder.mkdir()
    command = f"export GPUCHECK_DIR={shlex.quote(str(folder))}; " + cell_command(
        PROBE, shlex.quote(sys.executable)
    )
    t0 = time.perf_counter()
    job = await submit(
        ctx, {"name": "gpu-isolation", "instances": 2, "gpus": 1, "command": command}
    )
    detail = await ended(ctx, job.id)
    res.note(f"{job.id}: {detail.state.value} in {time.perf_counter() - t0:.2f} s")
    problems = []
    uuids = []
    for task in sorted(detail.tasks, key=lambda t: t.index):
        path = folder / f"probe-{task.index}.json"
        if not path.exists():
            problems.append(f"task {task.index} wrote nothing (state {task.state.value})")
            continue
        seen = json.loads(path.read_text())
        res.note(f"task {task.index}: job detail gpus {task.gpus}; {describe(ctx, seen)}")
        problem = matches(ctx, seen, task.gpus)
        if problem:
            problems.append(f"task {task.index}: {problem}")
        elif isinstance(seen["cuda"], list):
            uuids.append(seen["cuda"][0])
    if len(uuids) == 2 and uuids[0] == uuids[1]:
        problems.append(f"both tasks see the same GPU {uuids[0]}")
    for problem in problems:
        res.note(f"FAIL {problem}")
    res.result = "failed" if problems or len(uuids) != 2 else "passed"


async def check_kernel(ctx: Context, res: Result) -> None:
    from jupyter_client.manager import AsyncKernelManager

    from jupyter_pai.kernels.jobspec import KernelRequest
    from jupyter_pai.kernels.kernelspec import install

    ctx.step = "installing the kernelspec"
    res.note(f"kernelspec: {install('pai-gpu-check', KernelRequest('default', gpus=1))}")
    km = AsyncKernelManager(kernel_name="pai-gpu-check")
    client = None
    try:
        ctx.step = "starting the pai kernel"
        t0 = time.perf_counter()
        await km.start_kernel()
        client = km.client()
        client.start_channels()
        await client.wait_for_ready(timeout=ctx.timeout)
        res.note(f"kernel start -> kernel_info reply: {time.perf_counter() - t0:.2f} s")
        ctx.step = "running the cell"
        out: list[str] = []

        def hook(msg: dict[str, Any]) -> None:
            if msg["msg_type"] == "stream":
                out.append(msg["content"]["text"])

        reply = await client.execute_interactive(
            "!nvidia-smi -L\n" + PROBE, output_hook=hook, timeout=ctx.timeout
        )
        text = "".join(out)
        found = [json.loads(x[len(PREFIX) :]) for x in text.splitlines() if x.startswith(PREFIX)]
        if reply["content"]["status"] != "ok" or not found:
            res.note(
                f"FAIL the cell: {reply['content'].get('evalue', 'no probe line')}: {text[-500:]}"
            )
            res.result = "failed"
            return
        listing = [x for x in text.splitlines() if x.startswith("GPU ")]
        res.note(f"!nvidia-smi -L lists {len(listing)} GPU(s) (it ignores CUDA_VISIBLE_DEVICES)")
        jobs = [j for j in await ctx.backend.list_jobs() if not j.state.terminal]
        if len(jobs) != 1:
            res.note(f"FAIL expected one running job (the kernel's), found {[j.id for j in jobs]}")
            res.result = "failed"
            return
        task = (await ctx.backend.get_job(jobs[0].id)).tasks[0]
        res.note(f"kernel job {jobs[0].id}: gpus {task.gpus}; {describe(ctx, found[0])}")
        problem = matches(ctx, found[0], task.gpus)
        if problem:
            res.note(f"FAIL {problem}")
        res.result = "failed" if problem else "passed"
    finally:
        if client is not None:
            client.stop_channels()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(km.shutdown_kernel(now=True), 60)


async def check_ddp(ctx: Context, res: Result, no_torch: str | None) -> None:
    if no_torch:
        res.note(f"this check needs torch with CUDA: {no_torch}")
        return
    if len(ctx.backend.slots) < 2:
        res.note(f"needs 2 GPUs, the backend has {len(ctx.backend.slots)}")
        return
    from jupyter_pai.notebook.cellrun import CellOptions, run_cell
    from jupyter_pai.notebook.client import Client

    lines: list[str] = []

    def write(text: str) -> None:
        lines.append(text)
        print(f"    | {text}", end="", flush=True)

    client = Client()
    ctx.step = "running the %%pai run cell (2 instances x 1 GPU, NCCL)"
    options = CellOptions(gpus=1, instances=2, name="gpu-ddp")
    t0 = time.perf_counter()
    try:
        await asyncio.to_thread(run_cell, client, DDP_CELL, options, write)
    except asyncio.CancelledError:
        # Timed out: stopping the job ends the cell's output stream, so its thread returns.
        for job in await ctx.backend.list_jobs():
            if job.name == "gpu-ddp" and not job.state.terminal:
                await ctx.backend.stop_job(job.id)
        raise
    except Exception as error:
        res.note(f"FAIL the cell: {type(error).__name__}: {str(error)[-800:]}")
        res.result = "failed"
        return
    finally:
        client.close()
    res.note(f"cell done in {time.perf_counter() - t0:.2f} s")
    text = "".join(lines)
    sums = re.findall(r"RESULT rank=(\d+) world=(\d+) sum=(\S+) expected=(\S+)", text)
    bws = re.findall(r"BW rank=(\d+) ms=(\S+) algbw=(\S+) busbw=(\S+)", text)
    for rank, world, got, want in sums:
        res.note(f"rank {rank}/{world}: all_reduce sum {got} (expected {want})")
    for rank, ms, alg, bus in bws:
        res.note(f"rank {rank}: 256 MB all_reduce {ms} ms, algbw {alg} GB/s, busbw {bus} GB/s")
    good = len(sums) == 2 and all(g == w for _, _, g, w in sums) and len(bws) == 2
    res.result = "passed" if good else "failed"


def nvml_percent(index: str) -> float | None:
    try:
        out = run(
            [
                "nvidia-smi",
                f"--id={index}",
                "--query-gpu=utilization.gpu",
                "--format=csv,noheader,nounits",
            ]
        )
        return float(out.strip())
    except (OSError, subprocess.SubprocessError, ValueError):
        return None


async def check_utilisation(ctx: Context, res: Result, no_torch: str | None) -> None:
    if no_torch:
        res.note(f"nvidia-smi cannot load a GPU; this check needs torch with CUDA: {no_torch}")
        return
    folder = ctx.work / "load"
    folder.mkdir()
    command = (
        f"export GPUCHECK_DIR={shlex.quote(str(folder))} LOAD_SECONDS={ctx.load_seconds}; "
        + cell_command(LOAD, shlex.quote(sys.executable))
    )
    job = await submit(ctx, {"name": "gpu-load", "gpus": 1, "command": command})

    async def loading() -> bool:
        if (await ctx.backend.get_job(job.id)).state.terminal:
            raise RuntimeError(f"{job.id} ended before loading its GPU")
        return (folder / "load.started").exists()

    await wait_for(ctx, "waiting for the load to begin", loading)
    gpus = (await ctx.backend.get_job(job.id)).tasks[0].gpus
    res.note(
        f"{job.id} loads GPU {gpus}; samples 1 s apart: backend.utilisation | NVML via nvidia-smi"
    )
    ctx.step = "sampling utilisation"
    pairs = []
    for _ in range(max(3, int(ctx.load_seconds) - 5)):
        usage = await ctx.backend.utilisation(job.id)
        ours = usage.current.gpu_percent if usage.current else None
        direct = [await asyncio.to_thread(nvml_percent, g) for g in gpus]
        pairs.append((ours, direct[0] if direct else None))
        print(
            f"  backend {ours}% (source {usage.source}, note {usage.note}) | nvidia-smi {direct}%"
        )
        await asyncio.sleep(1)
    detail = await ended(ctx, job.id)
    res.note(f"{job.id}: {detail.state.value}")
    known = [(b, d) for b, d in pairs if b is not None and d is not None]
    res.note(
        f"{len(pairs)} samples, {len(known)} with both: backend max "
        f"{max((b for b, _ in known), default=None)}%, NVML (nvidia-smi) max "
        f"{max((d for _, d in known), default=None)}%"
    )
    busy = [b for b, d in pairs if b is not None and d is not None and b >= 50 and abs(b - d) <= 30]
    res.result = "passed" if len(busy) >= len(pairs) // 2 + 1 else "failed"
    if res.result == "failed":
        res.note("FAIL the backend's reading is missing, idle or far from NVML's in most samples")


async def stop_all(backend: LocalBackend) -> None:
    for job in await backend.list_jobs():
        if not job.state.terminal:
            with contextlib.suppress(Exception):
                await backend.stop_job(job.id)


async def main_async(
    args: argparse.Namespace, gpus: list[tuple[str, str, str]], work: Path
) -> list[Result]:
    backend = LocalBackend(state_dir=os.environ["JUPYTER_PAI_STATE_DIR"], housekeeping=0)
    await backend.start()
    print(f"backend: GPU slots detected {backend.slots}; NVIDIA GPUs {gpus}")
    ctx = Context(backend, work, gpus, args.timeout, args.load_seconds)
    no_torch = await asyncio.to_thread(torch_cuda)
    print(f"torch with CUDA: {no_torch or 'yes'}")
    checks: list[tuple[Result, Callable[[Context, Result], Awaitable[None]]]] = [
        (Result("1 isolation"), check_isolation),
        (Result("2 kernel"), check_kernel),
        (Result("3 ddp (nccl)"), lambda c, r: check_ddp(c, r, no_torch)),
        (Result("4 utilisation"), lambda c, r: check_utilisation(c, r, no_torch)),
    ]
    try:
        for res, check in checks:
            print(f"\n== check {res.check}", flush=True)
            try:
                await asyncio.wait_for(check(ctx, res), args.timeout)
            except TimeoutError:
                res.result = "failed"
                res.note(f"ERROR timed out after {args.timeout:.0f} s while {ctx.step}")
            except Exception as error:
                res.result = "failed"
                res.note(f"ERROR while {ctx.step}: {type(error).__name__}: {error}")
            await stop_all(backend)  # a failed check leaves no GPU held for the next
            print(f"   -> {res.result}")
    finally:
        await stop_all(backend)
        await backend.close()
    return [res for res, _ in checks]


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--timeout", type=float, default=180, help="seconds per check")
    parser.add_argument("--load-seconds", type=float, default=15, help="check 4's GPU load")
    args = parser.parse_args()
    gpus, missing = find_gpus()
    if missing:
        print(f"gpu_check: no NVIDIA GPU on this machine: {missing}; no check run")
        return 2
    with tempfile.TemporaryDirectory(prefix="gpu-check-") as tmp:
        work = Path(tmp)
        os.environ.pop("JUPYTER_PAI_LOCAL_GPUS", None)  # the GPUs the backend detects
        os.environ.update(
            JUPYTER_PAI_BACKEND="local",
            JUPYTER_PAI_STATE_DIR=str(work / "state"),
            JUPYTER_DATA_DIR=str(work / "data"),
            JUPYTER_CONFIG_DIR=str(work / "config"),
            IPYTHONDIR=str(work / "ipython"),
        )
        results = asyncio.run(main_async(args, gpus, work))
    print("\n| check | result | figures |\n| --- | --- | --- |")
    for res in results:
        print(f"| {res.check} | {res.result} | {'; '.join(res.figures)} |")
    return 0 if all(r.result == "passed" for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
