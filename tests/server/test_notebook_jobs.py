"""Notebooks run as jobs on the local backend: ``POST notebook-jobs`` (the file browser's
"Run as PAI job") and ``jupyter pai submit analysis.ipynb``: parameters injected as
papermill does, the executed notebook — outputs and errors — written beside the source or
into a storage; bad requests refused with nothing created."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import nbformat
from nbformat.v4 import new_code_cell, new_notebook

from .pai import PAIClient

CLI = (sys.executable, "-m", "jupyter_pai.cli")


def write_notebook(path: Path, *cells: str, tagged: int | None = None) -> Path:
    nb = new_notebook(cells=[new_code_cell(c) for c in cells])
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    if tagged is not None:
        nb.cells[tagged].metadata["tags"] = ["parameters"]
    nbformat.write(nb, path)
    return path


def outputs(cell: Any) -> str:
    return "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")


async def test_a_notebook_runs_as_a_job_with_parameters(pai: PAIClient) -> None:
    (pai.root_dir / "study").mkdir()
    write_notebook(
        pai.root_dir / "study" / "analysis.ipynb",
        "alpha = 0.1\noptimizer = 'sgd'",
        "import os\nprint('alpha', alpha, type(alpha).__name__, optimizer)\n"
        "print('gpus', os.environ['CUDA_VISIBLE_DEVICES'])\nopen('made-here.txt', 'w').write('x')",
        tagged=0,
    )
    body = {"path": "study/analysis.ipynb", "params": {"alpha": "0.5"}, "gpus": 1}
    r = await pai.request(
        "POST", "notebook-jobs", body=json.dumps(body), headers={"Content-Type": "application/json"}
    )
    assert r.code == 201, r
    result = r.json()
    job, output = result["job"], result["output"]
    assert output == f"study/{job['name']}.ipynb" and job["name"].startswith("analysis-")
    assert job["totalGpuNumber"] == 1
    await pai.wait_state(job["id"], "SUCCEEDED", timeout=120)

    executed = nbformat.read(pai.root_dir / output, as_version=4)
    assert [c.metadata.get("tags") for c in executed.cells] == [
        ["parameters"],
        ["injected-parameters"],
        None,
    ]
    assert executed.cells[1].source == "# Parameters\nalpha = 0.5\n"
    printed = outputs(executed.cells[2]).splitlines()
    assert printed[0] == "alpha 0.5 float sgd" and printed[1] not in ("gpus ", "gpus"), printed
    assert executed.metadata["jupyter_pai"]["status"] == "completed"
    assert executed.metadata["jupyter_pai"]["job"] == job["id"]
    assert (pai.root_dir / "study" / "made-here.txt").exists()  # ran in the notebook's folder
    # The source is left as it was.
    assert len(nbformat.read(pai.root_dir / "study" / "analysis.ipynb", as_version=4).cells) == 2


async def test_into_a_storage(pai: PAIClient, storage_root: Path) -> None:
    write_notebook(pai.root_dir / "small.ipynb", "print('to the storage')")
    body = {"path": "small.ipynb", "storage": "work/results"}
    r = await pai.request(
        "POST", "notebook-jobs", body=json.dumps(body), headers={"Content-Type": "application/json"}
    )
    assert r.code == 201, r
    result = r.json()
    name = result["job"]["name"]
    assert result["output"] is None
    where = Path(os.path.realpath(storage_root)) / "results" / f"{name}.ipynb"  # noqa: ASYNC240
    assert result["outputLocation"] == str(where)
    await pai.wait_state(result["job"]["id"], "SUCCEEDED", timeout=120)
    listing = await pai.get("storage", "work", "results")
    assert [e["name"] for e in listing["entries"]] == [f"{name}.ipynb"]


async def test_bad_requests_are_refused_and_nothing_is_created(
    pai: PAIClient, tmp_path: Path
) -> None:
    write_notebook(tmp_path / "outside.ipynb", "print(1)")
    (pai.root_dir / "notes.txt").write_text("not a notebook")
    write_notebook(pai.root_dir / "ok.ipynb", "print(1)")
    cases = [
        ({"path": "../outside.ipynb"}, "path"),
        ({"path": "notes.txt"}, "path"),
        ({"path": "ok.ipynb", "gpus": -1}, "gpus"),
        ({"path": "ok.ipynb", "storage": "nowhere"}, "storage"),
        ({"path": "ok.ipynb", "vc": "nope"}, "vc"),
        ({"path": "ok.ipynb", "gpus": 99}, "gpus"),
        ({"gpus": 1}, "path"),
    ]
    for body, field in cases:
        r = await pai.request(
            "POST",
            "notebook-jobs",
            body=json.dumps(body),
            headers={"Content-Type": "application/json"},
        )
        assert r.code == 400, (body, r)
        assert field in [e["path"] for e in r.json()["errors"]], (body, r.json())
    assert await pai.jobs() == []


def test_cli_runs_a_failing_notebook_and_keeps_its_error(
    pai_state_dir: Path, tmp_path: Path
) -> None:
    source = write_notebook(
        tmp_path / "broken.ipynb",
        "epochs = 1",
        "print('epochs', epochs)",
        "1 / 0",
        "print('never')",
        tagged=0,
    )
    done = subprocess.run(
        [*CLI, "submit", str(source), "--param", "epochs=3", "--name", "broken-run", "--wait"],
        capture_output=True,
        text=True,
        timeout=180,
        cwd="/",
    )
    assert done.returncode == 1, done.stderr
    output = tmp_path / "broken-run.ipynb"
    assert f"the executed notebook will be {output}" in done.stdout
    assert "broken-run: FAILED" in done.stdout
    executed = nbformat.read(output, as_version=4)
    assert outputs(executed.cells[2]) == "epochs 3\n"
    (error,) = executed.cells[3].outputs
    assert (error.output_type, error.ename) == ("error", "ZeroDivisionError")
    assert executed.cells[4].outputs == []  # not run after the error
    assert executed.metadata["jupyter_pai"]["status"] == "failed"
    refused = subprocess.run(
        [*CLI, "submit", str(source), "--storage", "nope"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert refused.returncode == 2 and "no storage 'nope'" in refused.stderr, refused.stderr
