""" "Run as PAI Job" on a notebook in the file browser runs it as a job with the
parameters given in the dialog, and the executed notebook opens when the job ends."""

from __future__ import annotations

import re

import nbformat
from nbformat.v4 import new_code_cell, new_notebook
from playwright.sync_api import expect

from .conftest import Lab, shot
from .test_open_job_file import show_file


def test_a_notebook_run_as_a_job_opens_executed(page, jobs: Lab) -> None:
    params = new_code_cell("alpha = 0.1")
    params.metadata["tags"] = ["parameters"]
    nb = new_notebook(
        cells=[
            params,
            new_code_cell(
                "import os\nprint(f'alpha={alpha} on GPU {os.environ[\"CUDA_VISIBLE_DEVICES\"]}')"
            ),
        ]
    )
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nbformat.write(nb, jobs.root_dir / "sweep.ipynb")

    show_file(page, "sweep.ipynb").click(button="right")
    shot(page, "run-notebook-0-menu")
    page.locator(".lm-Menu-itemLabel", has_text="Run as PAI Job").click()
    dialog = page.locator(".jp-Dialog")
    expect(dialog).to_contain_text("Run sweep.ipynb as a PAI job")
    dialog.locator("input[name='gpus']").fill("1")
    dialog.locator("textarea[name='params']").fill("alpha=0.5")
    shot(page, "run-notebook-1-dialog")
    dialog.get_by_role("button", name="Run").click()

    # The executed copy opens by itself once the job has ended.
    tab = page.locator(".lm-TabBar-tab", has_text=re.compile(r"^sweep-\d{8}-\d{6}\.ipynb"))
    expect(tab).to_be_visible(timeout=120_000)
    notebook = page.locator(".jp-NotebookPanel:visible")
    expect(notebook.locator(".jp-OutputArea-output")).to_contain_text(
        re.compile(r"alpha=0\.5 on GPU \d"), timeout=30_000
    )
    expect(notebook.locator(".jp-Cell").nth(1)).to_contain_text("alpha = 0.5")  # injected
    shot(page, "run-notebook-2-executed")

    name = tab.inner_text().strip().removesuffix(".ipynb")
    job = jobs.job_by_name(name)
    jobs.submitted.append(job["id"])
    assert job["state"] == "SUCCEEDED" and job["totalGpuNumber"] == 1
    executed = nbformat.read(jobs.root_dir / f"{name}.ipynb", as_version=4)
    assert executed.cells[1].metadata["tags"] == ["injected-parameters"]
