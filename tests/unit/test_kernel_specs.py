"""Kernelspecs for remote kernels (``jupyter pai kernelspec install``) and the job a
kernel runs as: kind ``kernel``, one task, its ports, and its key only in the Secret."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jupyter_pai.cli import main
from jupyter_pai.kernels.jobspec import KernelRequest, kernel_job
from jupyter_pai.spec.render import public_spec


def test_install_writes_a_kernelspec_named_for_its_vc_and_gpus(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("JUPYTER_DATA_DIR", str(tmp_path))
    code = main(
        ["kernelspec", "install", "research-2", "--vc", "research", "--gpus", "2",
         "--image", "pytorch-2.4", "--storage", "work", "--user"]
    )  # fmt: skip
    assert code == 0
    spec = json.loads((tmp_path / "kernels" / "research-2" / "kernel.json").read_text())
    assert spec["display_name"] == "Python 3 — research, 2 GPUs"
    assert spec["interrupt_mode"] == "message"
    assert spec["metadata"]["kernel_provisioner"] == {
        "provisioner_name": "pai-provisioner",
        "config": {
            "virtual_cluster": "research",
            "gpus": 2,
            "image": "pytorch-2.4",
            "storages": ["work"],
        },
    }
    assert "installed kernelspec research-2" in capsys.readouterr().out


def test_install_display_name_and_one_gpu(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JUPYTER_DATA_DIR", str(tmp_path))
    assert main(["kernelspec", "install", "one", "--vc", "default", "--gpus", "1"]) == 0
    assert main(["kernelspec", "install", "mine", "--vc", "a", "--display-name", "Mine"]) == 0
    names = {
        p.parent.name: json.loads(p.read_text())["display_name"]
        for p in (tmp_path / "kernels").glob("*/kernel.json")
    }
    assert names == {"one": "Python 3 — default, 1 GPU", "mine": "Mine"}


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--image", "No Such Image"], "--image"),
        (["--gpus", "-1"], "gpus: must be 0 or more"),
    ],
)
def test_install_refuses_bad_input(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    message: str,
) -> None:
    monkeypatch.setenv("JUPYTER_DATA_DIR", str(tmp_path))
    assert main(["kernelspec", "install", "k", "--vc", "default", *argv]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "kernels").exists()


def test_install_refuses_a_bad_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("JUPYTER_DATA_DIR", str(tmp_path))
    assert main(["kernelspec", "install", "a b", "--vc", "default"]) == 2
    assert "invalid kernelspec name 'a b'" in capsys.readouterr().err


@pytest.mark.parametrize("in_process", [True, False])
def test_kernel_job_holds_its_key_only_in_secrets(in_process: bool) -> None:
    request = KernelRequest("research", gpus=2, cpu=4, memory_mb=8192, storages=("work",))
    job = kernel_job(
        request, name="kernel-1234abcd", key="s3cr3t-key", image_uri="img:1",
        in_process_launcher=in_process,
    )  # fmt: skip
    assert job.extras.kind == "kernel"
    assert job.virtual_cluster == "research" and job.total_gpus == 2
    (role,) = job.task_roles.values()
    assert role.instances == 1
    assert role.resource_per_instance.ports == {"kernel": 6}
    assert (role.resource_per_instance.cpu, role.resource_per_instance.memory_mb) == (4, 8192)
    assert job.image_uri("kernel") == "img:1"
    assert [s.name for s in job.extras.storages] == ["work"]
    command = "\n".join(role.commands)
    assert "s3cr3t-key" not in command
    # A shell variable of its own (never exported), unset before ipykernel and the
    # launcher start.
    assert role.commands[0] == 'JUPYTER_PAI_KERNEL_KEY="<% $secrets.kernelKey %>"'
    unset = "unset ${!PAI_SECRET_@} JUPYTER_PAI_KERNEL_KEY"
    assert command.count(unset) == 2
    assert command.index(unset) < command.index("-m ipykernel_launcher")
    assert command.rindex(unset) < command.index("--connection-file")
    assert ("-m jupyter_pai.kernels.launcher" in command) == in_process
    assert "s3cr3t-key" not in json.dumps(public_spec(job))


EXAMPLES = Path(__file__).resolve().parents[2] / "kernelspecs"


@pytest.mark.parametrize("folder", sorted(p for p in EXAMPLES.iterdir() if p.is_dir()), ids=str)
def test_example_kernelspecs_are_what_the_cli_writes(folder: Path) -> None:
    from jupyter_pai.config import PAIConfig
    from jupyter_pai.kernels.kernelspec import kernelspec
    from jupyter_pai.submission.images import ImagePolicy

    spec = json.loads((folder / "kernel.json").read_text())
    config = spec["metadata"]["kernel_provisioner"]["config"]
    request = KernelRequest(
        virtual_cluster=config["virtual_cluster"],
        gpus=config["gpus"],
        image=config.get("image", ""),
        cpu=config.get("cpu"),
        memory_mb=config.get("memory_mb"),
        storages=tuple(config.get("storages", ())),
    )
    assert spec == kernelspec(request)
    catalogue = {i["name"] for i in PAIConfig().images}
    assert not request.image or request.image in catalogue  # a name of the default catalogue
    ImagePolicy.from_config(PAIConfig()).resolve(request.image)
    assert f"{config['virtual_cluster']}, {config['gpus']} GPU" in spec["display_name"]


def test_a_pod_ip_kernel_gets_its_curve_pair_through_secrets_only() -> None:
    job = kernel_job(
        KernelRequest("default", gpus=1), name="kernel-1", key="k3y",
        image_uri="", in_process_launcher=False, curve=("PUBLIC-z85", "SECRET-z85"),
    )  # fmt: skip
    assert job.secrets == {
        "kernelKey": "k3y",
        "curvePublicKey": "PUBLIC-z85",
        "curveSecretKey": "SECRET-z85",
    }
    (role,) = job.task_roles.values()
    command = "\n".join(role.commands)
    assert "SECRET-z85" not in command and "PUBLIC-z85" not in command
    assert 'JUPYTER_PAI_CURVE_SECRETKEY="<% $secrets.curveSecretKey %>"' in command
    assert "SECRET-z85" not in json.dumps(public_spec(job))
