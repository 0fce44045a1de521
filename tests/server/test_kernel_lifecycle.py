"""Remote kernels on the local backend: a ``pai`` kernelspec's kernel is a job of kind
``kernel`` holding GPU slots from the jobs' allocator. Interrupt, restart in the same job
with the same GPUs, shutdown freeing the GPUs, the queue with its reason, cancel, the
queue limit, impossible requests, and the idle self-end of a kernel whose server died."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from pathlib import Path

import pytest
from jupyter_client.manager import AsyncKernelManager

from jupyter_pai.backends.local import LocalBackend
from jupyter_pai.backends.models import JobDetail, JobState
from jupyter_pai.errors import Conflict, NotFound
from jupyter_pai.kernels.backends import backend_for
from jupyter_pai.kernels.provisioner import KernelStartError
from jupyter_pai.spec.parse import parse_job
from tests.kernels import (
    ENVIRONMENT,
    IDENTITY,
    eventually,
    kernel_environment,
    run,
    secrets_in_environment,
    write_kernelspec,
)

GPU_SLOTS = 2


@pytest.fixture
def backend(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pai_state_dir: Path) -> LocalBackend:
    for key, value in kernel_environment(tmp_path, GPU_SLOTS).items():
        monkeypatch.setenv(key, value)
    write_kernelspec(tmp_path, "pai-1", gpus=1)
    write_kernelspec(tmp_path, "pai-3", gpus=3)
    write_kernelspec(tmp_path, "pai-novc", virtual_cluster="research", gpus=1)
    write_kernelspec(tmp_path, "pai-badimage", gpus=1, image="No Such Image")
    write_kernelspec(tmp_path, "pai-limit", gpus=1, queue_limit_seconds=1)
    write_kernelspec(tmp_path, "pai-idle", gpus=1, idle_seconds=3)
    return LocalBackend(housekeeping=0, stop_grace_seconds=2)


async def start(name: str) -> AsyncKernelManager:
    km = AsyncKernelManager(kernel_name=name)
    await km.start_kernel()
    return km


async def kernel_jobs(backend: LocalBackend) -> list[JobDetail]:
    return [await backend.get_job(j.id) for j in await backend.list_jobs() if j.kind == "kernel"]


async def used_gpus(backend: LocalBackend) -> int:
    return sum(vc.used.gpu for vc in await backend.virtual_clusters())


async def sleeper(backend: LocalBackend, name: str, gpus: int) -> str:
    spec = {"name": name, "gpus": gpus, "command": "sleep 600"}
    job = await backend.submit(parse_job(spec).job)
    return job.id


async def test_restart_keeps_the_job_and_its_gpus(backend: LocalBackend) -> None:
    km = await start("pai-1")
    try:
        before, _ = await run(km, "x = 1; " + IDENTITY)
        (job,) = await kernel_jobs(backend)
        assert job.state == JobState.RUNNING and job.tasks[0].gpus
        await km.restart_kernel()
        after, _ = await run(km, IDENTITY)
        pid0, job0, gpus0, _ = before.split()
        pid1, job1, gpus1, x_survived = after.split()
        assert pid1 != pid0, "a restart starts a new kernel process"
        assert x_survived == "False"
        assert (job1, gpus1) == (job0, gpus0) == (job.id, ",".join(job.tasks[0].gpus))
        (same,) = await kernel_jobs(backend)
        assert same.id == job.id and same.state == JobState.RUNNING
        assert same.launched_time == job.launched_time, "no new trip through the queue"
    finally:
        await km.shutdown_kernel()


async def test_no_process_of_the_kernel_shows_its_key_in_its_environment(
    backend: LocalBackend,
) -> None:
    """``%env`` or ``os.environ`` printed into a saved notebook holds no key; nor does the
    environment block of the kernel or of its launcher, as ``/proc`` shows them."""
    km = await start("pai-1")
    try:
        out, reply = await run(km, ENVIRONMENT)
        assert reply["status"] == "ok", reply
        key = km.get_connection_info()["key"]
        assert secrets_in_environment(out, [key.decode() if isinstance(key, bytes) else key]) == []
        # Still the kernel it was: its job and GPUs in its environment.
        assert '"PAI_JOB_NAME"' in out and '"CUDA_VISIBLE_DEVICES"' in out
    finally:
        await km.shutdown_kernel()


async def test_interrupt_stops_a_running_cell(backend: LocalBackend) -> None:
    km = await start("pai-1")
    try:
        cell = asyncio.create_task(run(km, "import time; time.sleep(120)", timeout=60))
        await asyncio.sleep(2)  # the cell is running
        started = time.monotonic()
        await km.interrupt_kernel()
        _, reply = await asyncio.wait_for(cell, 20)
        assert reply["status"] == "error" and reply["ename"] == "KeyboardInterrupt", reply
        assert time.monotonic() - started < 10
        out, _ = await run(km, "print('still here')")
        assert out.strip() == "still here"
    finally:
        await km.shutdown_kernel()


async def test_shutdown_deletes_the_job_and_frees_its_gpus(backend: LocalBackend) -> None:
    km = await start("pai-1")
    (job,) = await kernel_jobs(backend)
    assert job.state == JobState.RUNNING
    assert await used_gpus(backend) == 1
    started = time.monotonic()
    await km.shutdown_kernel()
    # Gone, with its key and log: nothing of the kernel stays on the machine.
    with pytest.raises(NotFound):
        await backend.get_job(job.id)
    assert not backend.store.job_dir(job.id).exists()
    assert await used_gpus(backend) == 0
    assert time.monotonic() - started < 10
    assert not await km.is_alive()


async def test_queue_shows_why_and_starts_when_a_job_ends(backend: LocalBackend) -> None:
    holder = await sleeper(backend, "holder", GPU_SLOTS)
    ahead = await sleeper(backend, "ahead", GPU_SLOTS)
    km = AsyncKernelManager(kernel_name="pai-1")
    await backend_for(km)  # started once per server, as the server's kernels share it
    asked = time.monotonic()
    starting = asyncio.create_task(km.start_kernel())
    try:

        async def status() -> str | None:
            return getattr(km.provisioner, "status", None)

        first = await eventually(status, "the kernel's queue status", 2)
        assert first == "waiting for 1 GPU in VC default: 2 of 2 in use, 1 job ahead"
        assert time.monotonic() - asked < 2
        (waiting,) = await kernel_jobs(backend)
        assert waiting.state == JobState.WAITING and waiting.kind == "kernel"

        await backend.stop_job(ahead)

        async def updated() -> bool:
            return await status() == "waiting for 1 GPU in VC default: 2 of 2 in use, 0 jobs ahead"

        await eventually(updated, "the status to drop the job that left the queue", 5)
        assert not starting.done()

        await backend.stop_job(holder)
        await asyncio.wait_for(starting, 30)
        out, _ = await run(km, IDENTITY)
        assert out.split()[2] in ("0", "1")
        assert km.provisioner.status is None  # type: ignore[union-attr]
    finally:
        if not starting.done():
            starting.cancel()
        await km.shutdown_kernel()


async def test_stopping_a_waiting_kernel_cancels_its_start(backend: LocalBackend) -> None:
    await sleeper(backend, "holder", GPU_SLOTS)
    km = AsyncKernelManager(kernel_name="pai-1")
    starting = asyncio.create_task(km.start_kernel())

    async def waiting() -> list[JobDetail]:
        return [j for j in await kernel_jobs(backend) if j.state == JobState.WAITING]

    (job,) = await eventually(waiting, "the kernel job to wait", 10)
    await backend.stop_job(job.id)
    with pytest.raises(KernelStartError, match="ended before it started: stopped while waiting"):
        await asyncio.wait_for(starting, 10)


async def test_queue_limit_ends_the_wait_and_says_so(backend: LocalBackend) -> None:
    await sleeper(backend, "holder", GPU_SLOTS)
    with pytest.raises(KernelStartError) as error:
        await asyncio.wait_for(start("pai-limit"), 20)
    assert "queue_limit_seconds" in str(error.value)
    assert "waiting for 1 GPU in VC default: 2 of 2 in use" in str(error.value)
    assert await kernel_jobs(backend) == []  # its job stopped and deleted


@pytest.mark.parametrize(
    ("kernel", "reason"),
    [
        ("pai-3", "the job needs 3 GPUs at once but VC default has only 2"),
        ("pai-novc", "no virtual cluster 'research' here"),
        ("pai-badimage", "invalid image reference 'No Such Image'"),
    ],
)
async def test_impossible_request_fails_at_once(
    backend: LocalBackend, kernel: str, reason: str
) -> None:
    started = time.monotonic()
    with pytest.raises(KernelStartError, match=reason):
        await start(kernel)
    assert time.monotonic() - started < 3
    assert await backend.list_jobs() == []


SERVER = """
import sys, time
from jupyter_client.manager import KernelManager
km = KernelManager(kernel_name="pai-idle")
km.start_kernel()
print(km.provisioner.job_id, flush=True)
time.sleep(600)
"""


async def test_a_kernel_whose_server_died_ends_itself(backend: LocalBackend) -> None:
    """idle_seconds=3: alive while its server sends heartbeats, ended once it is killed."""
    server = await asyncio.create_subprocess_exec(
        sys.executable, "-c", SERVER, stdout=asyncio.subprocess.PIPE, env=dict(os.environ)
    )
    try:
        assert server.stdout is not None
        job_id = (await asyncio.wait_for(server.stdout.readline(), 60)).decode().strip()
        await asyncio.sleep(7)  # twice idle_seconds and more, with the server alive
        assert (await backend.get_job(job_id)).state == JobState.RUNNING
        server.send_signal(signal.SIGKILL)
        killed = time.monotonic()

        async def ended() -> bool:
            return (await backend.get_job(job_id)).state.terminal

        await eventually(ended, "the orphaned kernel's job to end", 20)
        assert await used_gpus(backend) == 0
        took = time.monotonic() - killed
        assert took >= 2.5, f"ended {took:.1f} s after its server: before idle_seconds"
    finally:
        if server.returncode is None:
            server.kill()
        await server.wait()


async def test_only_an_ended_job_is_deleted(backend: LocalBackend) -> None:
    """What a kernel's shutdown relies on: a running job is refused (stop it first), an
    unknown one is NotFound, an ended one goes with its folder."""
    job_id = await sleeper(backend, "kept", 1)
    with pytest.raises(Conflict, match="stop it before deleting it"):
        await backend.delete_job(job_id)
    with pytest.raises(NotFound):
        await backend.delete_job("root~no-such-job")
    await backend.stop_job(job_id)

    async def stopped() -> bool:
        return (await backend.get_job(job_id)).state == JobState.STOPPED

    await eventually(stopped, "the job to stop", 10)
    await backend.delete_job(job_id)
    assert job_id not in {j.id for j in await backend.list_jobs()}
