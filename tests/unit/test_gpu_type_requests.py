"""Asking for a GPU type from every surface that asks for GPUs: ``--gpus TYPE:N`` in
``jupyter pai kernelspec install`` and ``%%pai run``, a kernel's job, a notebook's job and
the form widget's short form all carry the role's ``skuType``; ``jupyter pai vcs`` lists
each VC's types; a malformed request names ``--gpus``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jupyter_pai.backends.models import GpuTypeUsage, Resources, VirtualCluster
from jupyter_pai.cli import main
from jupyter_pai.errors import SpecError
from jupyter_pai.kernels.jobspec import KernelRequest, kernel_job
from jupyter_pai.notebook.cellrun import CellOptions, cell_job
from jupyter_pai.notebook.tables import print_vcs
from jupyter_pai.spec import parse_job
from jupyter_pai.submission.jobs import parse_gpus


@pytest.mark.parametrize(
    ("text", "wanted"),
    [("0", (None, 0)), ("2", (None, 2)), ("H100-80GB:2", ("H100-80GB", 2)), ("-1", (None, -1))],
)
def test_gpus_arguments(text: str, wanted: tuple[str | None, int]) -> None:
    assert parse_gpus(text) == wanted


@pytest.mark.parametrize("text", [":2", "H100:", "H100:0", "a b:1", "two"])
def test_a_malformed_gpus_argument_names_the_option(text: str) -> None:
    with pytest.raises(SpecError) as error:
        parse_gpus(text)
    assert error.value.errors[0].path == "--gpus"


def test_kernelspec_install_with_a_gpu_type(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The local backend's GPUs have no types: the installer says so and writes it."""
    monkeypatch.setenv("JUPYTER_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("JUPYTER_PAI_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("JUPYTER_PAI_LOCAL_GPUS", "2")
    assert main(["kernelspec", "install", "h100", "--vc", "research", "--gpus", "H100-80GB:2"]) == 0
    spec = json.loads((tmp_path / "kernels" / "h100" / "kernel.json").read_text())
    assert spec["display_name"] == "Python 3 — research, 2 H100-80GB"
    config = spec["metadata"]["kernel_provisioner"]["config"]
    assert (config["gpus"], config["gpu_type"]) == (2, "H100-80GB")
    assert "VC research lists no GPU types here: any GPU will do" in capsys.readouterr().err
    assert main(["kernelspec", "install", "bad", "--vc", "research", "--gpus", "H100:"]) == 2
    assert not (tmp_path / "kernels" / "bad").exists()


def test_a_kernels_job_asks_for_its_type() -> None:
    request = KernelRequest(virtual_cluster="research", gpus=2, gpu_type="H100-80GB")
    job = kernel_job(request, name="k", key="k" * 32, image_uri="", in_process_launcher=True)
    assert job.gpu_type("kernel") == "H100-80GB"
    assert job.task_roles["kernel"].resource_per_instance.gpu == 2
    untyped = kernel_job(
        KernelRequest(virtual_cluster="research", gpus=1),
        name="k",
        key="k" * 32,
        image_uri="",
        in_process_launcher=True,
    )
    assert untyped.gpu_type("kernel") is None and untyped.extras.hived_scheduler is None


def test_a_cells_job_asks_for_its_type() -> None:
    options = CellOptions(gpus=2, gpu_type="A100-40GB", instances=2)
    job = parse_job(cell_job("print(1)", options, "python3")).job
    assert [job.gpu_type(r) for r in job.task_roles] == ["A100-40GB"]
    assert job.total_gpus == 4


def test_jupyter_pai_vcs_lists_each_vcs_types(capsys: pytest.CaptureFixture[str]) -> None:
    types = [
        GpuTypeUsage(
            name="A100-40GB", product="NVIDIA-A100-SXM4-40GB", capacity=16, used=2, free=14
        ),
        GpuTypeUsage(
            name="H100-80GB", product="NVIDIA-H100-80GB-HBM3", capacity=16, used=0, free=16
        ),
    ]
    vc = VirtualCluster(
        name="research",
        capacity=Resources(gpu=32),
        used=Resources(gpu=2),
        free=Resources(gpu=30),
        gpu_types=types,
    )
    print_vcs([vc])
    lines = capsys.readouterr().out.splitlines()
    assert lines[3].split() == ["VC", "GPU", "TYPE", "USED", "FREE", "TOTAL", "PRODUCT"]
    assert lines[4].split() == ["research", "A100-40GB", "2", "14", "16", "NVIDIA-A100-SXM4-40GB"]
    assert lines[5].split() == ["research", "H100-80GB", "0", "16", "16", "NVIDIA-H100-80GB-HBM3"]
