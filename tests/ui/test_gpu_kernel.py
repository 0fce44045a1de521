"""A remote GPU kernel in JupyterLab on the local backend. The launcher shows the
kernelspec with its VC and GPU count; a notebook started with it while the VC is full says
why it waits (a notification, within 2 s, with Cancel); once a job ends the kernel starts
and a cell prints its GPU and PAI variables; shutting the kernel down frees the GPU in the
panel's cluster view."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import pytest
from playwright.sync_api import expect

from jupyter_pai.kernels.jobspec import KernelRequest
from jupyter_pai.kernels.kernelspec import kernelspec

from .conftest import Lab, job_row, open_page, open_panel, run_lab, shot

pytestmark = pytest.mark.ui
DISPLAY = "Python 3 — default, 1 GPU"


@pytest.fixture(scope="module")
def gpu_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    """JupyterLab with 2 GPU slots and a ``pai`` kernelspec asking for 1 of them."""
    base = tmp_path_factory.mktemp("gpu-kernel-lab")
    spec = base / "share" / "kernels" / "pai-gpu"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps(kernelspec(KernelRequest("default", gpus=1))))
    env = {
        "JUPYTER_PAI_LOCAL_GPUS": "2",
        "JUPYTER_PAI_BACKEND": "local",
        "JUPYTER_PATH": str(base / "share"),
        "IPYTHONDIR": str(base / "ipython"),
    }
    with run_lab(base, env=env, args=["--LocalBackend.stop_grace_seconds=2"]) as lab:
        yield lab


def kernel_jobs(lab: Lab) -> list[dict[str, Any]]:
    return [j for j in lab.json("jobs")["items"] if j["kind"] == "kernel"]


def test_a_gpu_kernel_queues_runs_and_frees_its_gpu(browser: object, gpu_lab: Lab) -> None:
    lab = gpu_lab
    holder = lab.submit("holder", "sleep 600", gpu=2)
    lab.wait_state(holder["id"], "RUNNING")
    with open_page(browser, lab, "gpu-kernel") as page:
        card = page.locator(".jp-LauncherCard[data-category='Notebook']", has_text=DISPLAY)
        expect(card).to_be_visible()
        shot(page, "gpu-kernel-0-launcher")

        clicked = time.time()
        card.click()
        toast = page.locator(".Toastify__toast", has_text="Kernel kernel-")
        expect(toast).to_contain_text(
            "waiting for 1 GPU in VC default: 2 of 2 in use, 0 jobs ahead", timeout=10_000
        )
        seen = time.time()
        expect(toast.get_by_role("button", name="Cancel")).to_be_visible()
        page.wait_for_timeout(800)  # the toast's slide-in, for the screenshot only
        shot(page, "gpu-kernel-1-queued")
        (waiting,) = kernel_jobs(lab)
        assert waiting["state"] == "WAITING"
        # From the kernel's start request (its job's submission) to the words on screen.
        asked = datetime.fromisoformat(waiting["submissionTime"]).timestamp()
        print(f"click -> start request {asked - clicked:.2f} s, -> message {seen - asked:.2f} s")

        lab.stop(holder["id"])
        expect(toast).to_have_count(0, timeout=30_000)
        notebook = page.locator(".jp-NotebookPanel:visible")
        cell = notebook.locator(".jp-Cell .jp-InputArea-editor").first
        cell.click()
        page.keyboard.type(
            "import os; print('GPU', os.environ['CUDA_VISIBLE_DEVICES'], "
            "os.environ['PAI_JOB_NAME'], os.environ['PAI_VIRTUAL_CLUSTER'])"
        )
        page.keyboard.press("Shift+Enter")
        output = notebook.locator(".jp-OutputArea-output").first
        expect(output).to_contain_text(f"{waiting['id']} default", timeout=60_000)
        assert output.inner_text().split()[1] in ("0", "1")
        shot(page, "gpu-kernel-2-cell-ran")

        # The panel lists the kernel's job with its badge; the cluster view counts its GPU.
        (running,) = kernel_jobs(lab)
        assert running["state"] == "RUNNING" and running["id"] == waiting["id"]
        open_panel(page, "jobs")
        row = job_row(page, running["name"])
        expect(row.locator(".jp-PAI-kernel-badge")).to_have_text("kernel")
        expect(row.locator(".jp-PAI-col-state")).to_have_text("RUNNINGkernel")
        shot(page, "gpu-kernel-3-panel")
        open_panel(page, "cluster")
        vc = page.locator(".jp-PAI-vc[data-vc='default']")
        meter = vc.get_by_role("meter")
        expect(meter).to_have_attribute("aria-valuenow", "1")
        expect(vc.locator(".jp-PAI-vc-kernels")).to_have_text("kernels 1")
        shot(page, "gpu-kernel-3b-cluster")

        page.get_by_role("menuitem", name="Kernel").click()
        page.get_by_role("menuitem", name="Shut Down Kernel").click()
        # Shut down: the kernel's job is stopped and deleted within 10 s.
        deadline = time.monotonic() + 10
        while kernel_jobs(lab):
            assert time.monotonic() < deadline, kernel_jobs(lab)
            time.sleep(0.2)
        vcs = {v["name"]: v for v in lab.json("virtual-clusters")["items"]}
        assert vcs["default"]["used"]["gpu"] == 0
        expect(meter).to_have_attribute("aria-valuenow", "0", timeout=10_000)
        expect(vc.locator(".jp-PAI-vc-kernels")).to_have_count(0)
        shot(page, "gpu-kernel-4-gpu-free")
        open_panel(page, "jobs")
        expect(row).to_have_count(0, timeout=10_000)
        shot(page, "gpu-kernel-5-deleted")
    assert seen - asked <= 2.5, f"the queue message came {seen - asked:.1f} s after the request"
