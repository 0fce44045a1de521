"""Executing the tutorial notebooks (``examples/*.ipynb``) with nbclient and checking what
their cells printed; shared by the tutorial tests and the Binder test."""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"

# Run by a (possibly other) Python: executes one notebook in place, its folder as the
# working directory, widget state kept in the notebook's metadata as JupyterLab saves it.
EXECUTE = """
import sys, nbformat, nbclient
path, timeout = sys.argv[1], int(sys.argv[2])
nb = nbformat.read(path, as_version=4)
client = nbclient.NotebookClient(
    nb, timeout=timeout, kernel_name="python3", allow_errors=False,
    resources={"metadata": {"path": str(__import__("pathlib").Path(path).parent)}},
)
try:
    client.execute()
finally:
    nbformat.write(nb, path)
"""


def execute_command(python: str, notebook: Path, timeout: int = 240) -> list[str]:
    return [python, "-c", EXECUTE, str(notebook), str(timeout)]


def tutorial_env(state_dir: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The local backend with 4 simulated GPU slots in a state directory of the test's."""
    return {
        **os.environ,
        "JUPYTER_PAI_BACKEND": "local",
        "JUPYTER_PAI_LOCAL_GPUS": "4",
        "JUPYTER_PAI_STATE_DIR": str(state_dir),
        **(extra or {}),
    }


def read(notebook: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(notebook.read_text())
    return data


def cell(nb: Mapping[str, Any], starts: str) -> dict[str, Any]:
    """The code cell whose source starts with ``starts``."""
    for c in nb["cells"]:
        source = "".join(c["source"])
        if c["cell_type"] == "code" and source.startswith(starts):
            return dict(c)
    raise AssertionError(f"no code cell starts with {starts!r}")


def text(c: Mapping[str, Any]) -> str:
    """Everything a cell printed (streams and plain-text results), errors included."""
    parts = []
    for out in c["outputs"]:
        if out["output_type"] == "stream":
            parts.append("".join(out["text"]))
        elif out["output_type"] in ("execute_result", "display_data"):
            parts.append("".join(out["data"].get("text/plain", "")))
        elif out["output_type"] == "error":
            parts.append("\n".join(out["traceback"]))
    return "".join(parts)


def result(c: Mapping[str, Any]) -> dict[str, Any]:
    results = [o for o in c["outputs"] if o["output_type"] == "execute_result"]
    assert results, f"cell has no result: {c['source']}"
    # nbformat keeps text as a list of lines
    return {k: "".join(v) if isinstance(v, list) else v for k, v in results[-1]["data"].items()}


def widget_models(nb: Mapping[str, Any]) -> dict[str, Any]:
    """The widget models the kernel had when the notebook finished (model id → state)."""
    state = nb["metadata"].get("widgets", {}).get(WIDGET_STATE, {}).get("state", {})
    return {mid: model["state"] for mid, model in state.items()}


def check_getting_started(nb: Mapping[str, Any], backend: str = "local") -> None:
    """What examples/getting-started.ipynb must have printed with nothing else running:
    on the local backend with 4 simulated GPU slots, or on the test cluster (``backend``
    ``kubernetes``), where GPUs are the scheduler's to pick and not named to the pods."""
    local = backend == "local"
    setup = text(cell(nb, "from jupyter_pai import Client"))
    assert f"backend: {backend}," in setup, setup
    free = re.search(r"VC default: (\d+) of (\d+) GPUs free", setup)
    assert free and free[1] == free[2] and int(free[1]) >= 2, setup
    if local:
        assert "GPU slots: 4" in setup and free[1] == "4", setup

    hello = text(cell(nb, "import time"))
    assert "SUCCEEDED" in hello, hello
    gpu = (" on GPU 0", " on GPU 1") if local else ("", "")
    assert f"[worker-0] hello from rank 0 of 2{gpu[0]}" in hello, hello
    assert f"[worker-1] hello from rank 1 of 2{gpu[1]}" in hello, hello
    job_id = hello.split()[0]

    events = text(cell(nb, "for event in job.events()"))
    assert "Scheduled" in events, events
    if local:
        assert "Scheduled: all 2 task(s) admitted together; GPUs 0,1" in events, events
        assert "Succeeded: 2 of 2 worker instance(s) succeeded" in events, events

    vcs = text(cell(nb, "%load_ext jupyter_pai"))
    assert "default" in vcs and "GPUS FREE" in vcs, vcs

    run = text(cell(nb, "%%pai run --instances 2"))
    for rank in (0, 1):
        line = f"[worker-{rank}] rank {rank} of 2, GPU {rank}" if local else f"rank {rank} of 2,"
        assert line in run, run
    assert "SUCCEEDED" in run, run

    jobs = text(cell(nb, "%pai jobs"))
    assert job_id in jobs and jobs.count("SUCCEEDED") >= 2, jobs

    models = widget_models(nb)
    launcher = result(cell(nb, "import jupyter_pai.widgets"))
    monitor = result(cell(nb, "pw.monitor(client)"))
    for shown in (launcher, monitor):
        assert shown[WIDGET_VIEW]["model_id"] in models, "widget state was not saved"
    labels = [m.get("options", m.get("_options_labels")) for m in models.values()]
    # Ended pods may still hold their GPUs for a moment on the cluster.
    free_now = free[1] if local else r"\d+"
    picker = re.compile(f"default — {free_now} of {free[2]} GPUs free")
    assert any(isinstance(o, list) and any(picker.fullmatch(x) for x in o) for o in labels), (
        f"the launcher's VC picker does not show {picker.pattern!r}: {labels}"
    )
    names = {m.get("description") for m in models.values()}
    assert job_id.split("~")[1] in names, "the monitor does not list the hello job"

    shown_job = result(cell(nb, "job"))
    assert f'data-job-id="{job_id}"' in shown_job["text/html"]
    assert 'data-state="SUCCEEDED"' in shown_job["text/html"]
    assert shown_job[WIDGET_VIEW]["model_id"] in models


def check_pytorch_ddp(nb: Mapping[str, Any]) -> None:
    """examples/pytorch-ddp.ipynb: two torchrun nodes trained one model over gloo."""
    submitted = text(cell(nb, "import time"))
    assert "with 1 GPU(s) per instance" in submitted, submitted
    out = text(cell(nb, "for line in job.output()"))
    for rank in (0, 1):
        assert f"[worker-{rank}] [default0]:rank {rank}/2: training on" in out, out
        assert f"rank {rank}: parameters identical on all 2 ranks: True" in out, out
    assert "with gloo" in out, out
    losses = [float(line.rsplit(" ", 1)[1]) for line in out.splitlines() if ": loss " in line]
    assert len(losses) == 3 and losses[-1] < losses[0] / 10, f"the loss did not fall: {losses}"
    assert out.rstrip().endswith("SUCCEEDED"), out


def check_remote_gpu_kernel(nb: Mapping[str, Any], backend: str = "local") -> None:
    """examples/remote-gpu-kernel.ipynb: a kernelspec from the CLI, its kernel a job of
    kind kernel holding a GPU until it shuts down (on the local backend: slot 0 of 4)."""
    local = backend == "local"
    installed = text(cell(nb, "!jupyter pai kernelspec install pai-gpu"))
    assert "installed kernelspec pai-gpu in" in installed, installed
    assert "the remote kernel is ready" in text(cell(nb, "from jupyter_client.manager"))
    ran = text(cell(nb, "code = "))
    assert "status: ok" in ran, ran
    if local:
        assert "GPUs: 0" in ran, ran
    job_id = ran.split("job: ", 1)[1].split()[0]
    listed = text(cell(nb, "from jupyter_pai import Client"))
    assert f"{job_id} RUNNING 1 GPU VC default" in listed, listed
    before = int(listed.rsplit("free GPUs in VC default: ", 1)[1].split()[0])
    ended = text(cell(nb, "import asyncio"))
    assert f"{job_id} deleted" in ended, ended  # its job stopped and deleted
    after = int(ended.rsplit("free GPUs in VC default: ", 1)[1].split()[0])
    assert after == before + 1, f"the kernel's GPU was not given back: {before} -> {after}"
    if local:
        assert before == 3, listed


def python() -> str:
    return sys.executable
