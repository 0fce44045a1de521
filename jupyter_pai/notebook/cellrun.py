"""``%%pai run``: a cell's code as a (distributed) job, its tasks' output streamed back.

Every instance runs the cell as a Python file with the job's full environment (``RANK``,
``WORLD_SIZE``, ``MASTER_ADDR``, ``PAI_*``). The code travels inside the job's command,
base64-encoded: it reaches a pod on another machine as surely as a local process, and no
character of it can be read as a shell or ``<% %>`` marker. Nothing here needs IPython, so
it is tested without a kernel."""

from __future__ import annotations

import base64
import secrets
import shlex
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..backends.models import JobState
from .client import Client, Job


@dataclass
class CellOptions:
    """What ``%%pai run`` accepts (the short form's fields)."""

    vc: str | None = None
    gpus: int = 0
    #: the GPU type (``H100-80GB``); None: any
    gpu_type: str | None = None
    instances: int = 1
    image: str | None = None
    name: str | None = None
    detach: bool = False


def default_name() -> str:
    return f"cell-{time.strftime('%H%M%S')}-{secrets.token_hex(2)}"


def cell_command(code: str, python: str) -> str:
    """The shell command that writes the cell to a file of its own and runs it unbuffered
    (so its lines reach the notebook as they are printed)."""
    payload = base64.b64encode(code.encode("utf-8")).decode("ascii")
    return (
        'cell="$(mktemp -d)/cell.py" && '
        f'printf %s {payload} | base64 -d > "$cell" && '
        f'PYTHONUNBUFFERED=1 {python} -u "$cell"'
    )


def cell_job(code: str, options: CellOptions, python: str) -> dict[str, Any]:
    """The short-form job that runs ``code`` in every instance."""
    job: dict[str, Any] = {
        "name": options.name or default_name(),
        "command": cell_command(code, python),
        "gpus": options.gpus,
        "instances": options.instances,
        "description": "a notebook cell (%%pai run)",
    }
    if options.gpu_type:
        job["gpuType"] = options.gpu_type
    if options.vc:
        job["vc"] = options.vc
    if options.image:
        job["image"] = options.image
    return job


def python_for(client: Client) -> str:
    """The interpreter tasks run the cell with: this kernel's own where tasks run on this
    machine (the local backend: same packages), else the image's ``python3`` (or ``python``)."""
    if client.info().tasks_run_here:
        return shlex.quote(sys.executable)
    return '"$(command -v python3 || command -v python)"'


def run_cell(
    client: Client,
    code: str,
    options: CellOptions,
    write: Callable[[str], None],
    *,
    python: str | None = None,
) -> Job | None:
    """Submit the cell, stream every task's lines to ``write`` labelled ``[role-index]``, and
    end with the outcome: a line for success, :class:`~.outcome.JobFailed` otherwise.
    ``KeyboardInterrupt`` (the cell interrupted) stops the job, then goes on. With
    ``options.detach`` return the submitted job at once."""
    job = client.submit(cell_job(code, options, python or python_for(client)))
    if options.detach:
        write(f"[pai] submitted {job.id} ({job.detail.state.value})\n")
        return job
    started = time.monotonic()
    if job.detail.state is JobState.WAITING:  # queued for GPUs: say why the cell is quiet
        write(f"[pai] {job.id} WAITING: {job.detail.waiting_reason or 'queued'}\n")
    try:
        for line in job.output():
            write(f"[{line.task}] {line.text}\n")
        detail = job.wait(check=True)
    except KeyboardInterrupt:
        write(f"[pai] interrupted: stopping {job.id}\n")
        job.stop()
        try:
            job.wait(60)
        finally:
            write(f"[pai] {job.id} {job.detail.state.value}\n")
        raise
    if detail.state is JobState.SUCCEEDED:
        write(f"[pai] {job.id} SUCCEEDED in {time.monotonic() - started:.1f} s\n")
    return None
