"""Helpers for the remote-kernel tests (local backend in tests/server, the test cluster in
tests/kube): ``pai`` kernelspecs in a folder of their own, running a cell, waiting with a
deadline."""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

from jupyter_client.manager import AsyncKernelManager

from jupyter_pai.kernels.jobspec import KernelRequest
from jupyter_pai.kernels.kernelspec import kernelspec


def write_kernelspec(jupyter_path: Path, name: str, **config: Any) -> str:
    """A ``pai`` kernelspec under ``jupyter_path/kernels``; ``config`` as the provisioner's
    (virtual_cluster, gpus, … and any PAIProvisioner trait such as idle_seconds)."""
    request = KernelRequest(
        virtual_cluster=config.pop("virtual_cluster", "default"), gpus=config.pop("gpus", 0)
    )
    spec = kernelspec(request)
    spec["metadata"]["kernel_provisioner"]["config"].update(config)
    folder = jupyter_path / "kernels" / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "kernel.json").write_text(json.dumps(spec))
    return name


def kernel_environment(tmp: Path, gpus: int) -> dict[str, str]:
    """What a test sets so kernels find the kernelspecs and use a fresh state directory."""
    repo = str(Path(__file__).resolve().parents[1])
    path = os.environ.get("PYTHONPATH", "")
    return {
        "JUPYTER_PATH": str(tmp),
        "JUPYTER_PAI_STATE_DIR": str(tmp / "pai-state"),
        "JUPYTER_PAI_LOCAL_GPUS": str(gpus),
        # A history database of the test's own (the conformance suite searches it).
        "IPYTHONDIR": str(tmp / "ipython"),
        "PYTHONPATH": os.pathsep.join(p for p in (repo, path) if p),
    }


#: A cell printing the kernel's process, job, GPUs and whether ``x`` survived.
IDENTITY = (
    "import os; print(os.getpid(), os.environ['PAI_JOB_NAME'], "
    "os.environ.get('CUDA_VISIBLE_DEVICES', '-'), 'x' in globals())"
)

T = TypeVar("T")


async def run(km: AsyncKernelManager, code: str, timeout: float = 30) -> tuple[str, dict[str, Any]]:
    """The cell's printed output and its execute_reply content."""
    client = km.client()
    client.start_channels()
    try:
        await client.wait_for_ready(timeout=timeout)
        out: list[str] = []

        def hook(msg: dict[str, Any]) -> None:
            if msg["msg_type"] == "stream":
                out.append(msg["content"]["text"])

        reply = await client.execute_interactive(code, output_hook=hook, timeout=timeout)
        return "".join(out), reply["content"]
    finally:
        client.stop_channels()


async def eventually(check: Callable[[], Awaitable[T]], what: str, timeout: float) -> T:
    deadline = time.monotonic() + timeout
    while True:
        value = await check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        await asyncio.sleep(0.05)


#: A cell printing (JSON) what code in the kernel sees of its environment: ``os.environ``,
#: its own environment block and its parent's (the launcher), as ``/proc`` shows them.
ENVIRONMENT = """
import json, os
def block(pid):
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            return f.read().decode(errors="replace")
    except OSError as error:
        return f"unreadable: {error}"
print(json.dumps({"environ": dict(os.environ), "self": block("self"), "parent": block(os.getppid())}))
"""

SECRET_NAMES = ("JUPYTER_PAI_KERNEL_KEY", "JUPYTER_PAI_CURVE_", "PAI_SECRET_")


def secrets_in_environment(printed: str, values: list[str]) -> list[str]:
    """What of the kernel's secrets (their names' variables, their ``values``) the output
    of :data:`ENVIRONMENT` shows, and where."""
    seen = json.loads(printed)
    found = [f"os.environ: {n}" for n in seen["environ"] if n.startswith(SECRET_NAMES)]
    for where in ("self", "parent"):
        block = seen[where]
        assert not block.startswith("unreadable"), block
        names = [entry.partition("=")[0] for entry in block.split("\0")]
        found += [f"{where} environ: {n}" for n in names if n.startswith(SECRET_NAMES)]
    text = json.dumps(seen)
    found += [f"the value {v[:4]}…" for v in values if v and v in text]
    return found
