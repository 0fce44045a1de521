"""Executes ``tests/notebooks/magics.ipynb`` with nbclient in a real kernel and checks what
its cells printed; the local and the cluster tests share it. The kernel inherits this
process's environment (state directory, backend, kubeconfig), and ``client`` — a
:class:`jupyter_pai.Client` on the same backend — watches the jobs from outside.

The cell ``interrupt`` runs a job that prints forever: once its first line has reached the
cell, the kernel is interrupted, and the job must end STOPPED."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import nbformat
from nbclient import NotebookClient

from jupyter_pai import Client
from jupyter_pai.backends.models import JobState

NOTEBOOK = Path(__file__).parent / "notebooks" / "magics.ipynb"


def text_of(cell: Any) -> str:
    """Everything a cell printed (streams and plain-text results)."""
    parts = []
    for out in cell.get("outputs", []):
        if out["output_type"] == "stream":
            parts.append(out["text"])
        elif "data" in out and "text/plain" in out["data"]:
            parts.append(out["data"]["text/plain"] + "\n")
    return "".join(parts)


def error_of(cell: Any) -> dict[str, Any]:
    errors = [o for o in cell.get("outputs", []) if o["output_type"] == "error"]
    assert len(errors) == 1, cell.get("outputs")
    return dict(errors[0])


async def interrupt_when_running(
    nb_client: NotebookClient, cell: Any, index: int, client: Client
) -> str:
    """Run the cell, interrupt the kernel once the job's first line is in the cell's output;
    returns the job's id."""
    run = asyncio.create_task(nb_client.async_execute_cell(cell, index))
    deadline = time.monotonic() + 120
    while "tick 0" not in text_of(cell):
        assert not run.done(), f"the cell ended before printing: {cell.get('outputs')}"
        assert time.monotonic() < deadline, f"no output from the long job: {cell.get('outputs')}"
        await asyncio.sleep(0.1)
    (job,) = await client.jobs_async(keyword="long")
    assert job.state is JobState.RUNNING, job
    await nb_client.km.interrupt_kernel()
    await asyncio.wait_for(run, 90)
    return job.id


async def execute(workdir: Path, client: Client) -> tuple[Any, str]:
    """The executed notebook, and the id of the job that was interrupted."""
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nb_client = NotebookClient(
        nb, timeout=240, kernel_name="python3", resources={"metadata": {"path": str(workdir)}}
    )
    interrupted = ""
    async with nb_client.async_setup_kernel():
        for index, cell in enumerate(nb.cells):
            if cell.cell_type != "code":
                continue
            if cell.id == "interrupt":
                interrupted = await interrupt_when_running(nb_client, cell, index, client)
            else:
                await nb_client.async_execute_cell(cell, index)
    nbformat.write(nb, workdir / "magics-executed.ipynb")  # kept for a look when a test fails
    return nb, interrupted


async def check_magics_notebook(workdir: Path, client: Client) -> None:
    nb, interrupted = await execute(workdir, client)
    cells = {c.id: c for c in nb.cells}

    ranks = text_of(cells["two-ranks"])
    for rank in (0, 1):
        assert f"[worker-{rank}] hello from rank {rank} of 2\n" in ranks, ranks
        assert f"[worker-{rank}] rank {rank} sees MASTER_ADDR True\n" in ranks, ranks
    assert "~ranks SUCCEEDED in " in ranks, ranks

    failing = cells["failing"]
    assert "[worker-0] about to fail\n" in text_of(failing), text_of(failing)
    error = error_of(failing)
    report = "\n".join(error["traceback"])
    assert error["ename"] == "JobFailed", error
    assert "~failing FAILED" in report and "task worker-0 failed (exit code 1" in report, report
    assert "return a / b" in report and "ZeroDivisionError: division by zero" in report, report

    listing = text_of(cells["jobs"]).splitlines()
    assert listing[0].split()[:3] == ["ID", "STATE", "VC"], listing
    states = {row.split()[0].split("~")[1]: row.split()[1] for row in listing[1:]}
    assert states == {"ranks": "SUCCEEDED", "failing": "FAILED"}, listing

    assert "[pai] submitted " in text_of(cells["detach"]) and "<Job " in text_of(cells["detach"])
    # %load_ext made the Job a live widget too (text/plain beside it for other front ends).
    bundles = [o.get("data", {}) for o in cells["detach"].outputs if "data" in o]
    assert any("application/vnd.jupyter.widget-view+json" in b for b in bundles), bundles
    detached = text_of(cells["detach"]).split("[pai] submitted ")[1].split()[0]
    assert text_of(cells["detached-result"]) == "SUCCEEDED\nin the background\n"
    shown = text_of(cells["show"])
    assert shown.split()[:2] == [detached, "SUCCEEDED"], shown
    assert ["worker-0", "SUCCEEDED"] in [row.split()[:2] for row in shown.splitlines()], shown
    assert text_of(cells["logs"]) == "in the background\n"
    submitted = text_of(cells["submit"])
    assert "submitted " in submitted and "~hello: SUCCEEDED" in submitted, submitted
    assert submitted.endswith("hello magics\n"), submitted
    assert "[worker-0] rank defined in the job: False\n" in text_of(cells["isolated"])
    assert "default" in text_of(cells["vcs"])
    assert "python-3.11" in text_of(cells["images"])
    to_stop = text_of(cells["to-stop"]).split("[pai] submitted ")[1].split()[0]
    assert text_of(cells["stop"]).split(": ")[0] == to_stop
    assert text_of(cells["stop"]).split(": ")[1].strip() in ("STOPPING", "STOPPED")
    assert (await client.job_async(to_stop)).state in (JobState.STOPPING, JobState.STOPPED)

    stopped = cells["interrupt"]
    assert f"[pai] interrupted: stopping {interrupted}\n" in text_of(stopped), text_of(stopped)
    assert error_of(stopped)["ename"] == "KeyboardInterrupt"
    assert (await client.job_async(interrupted)).detail.state is JobState.STOPPED
    assert f"[pai] {interrupted} STOPPED\n" in text_of(stopped), text_of(stopped)
