"""Which images may be chosen: catalogue names resolve to their URI, any valid reference
passes while custom images are allowed, and only the catalogue's and the listed
registries' images once the admin turns them off; the CLI's kernelspec installer follows
the same policy."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jupyter_pai.cli import main
from jupyter_pai.errors import SpecError
from jupyter_pai.spec import parse_job
from jupyter_pai.submission.images import ImagePolicy
from tests.registry import image_job

STATIC = [
    {"name": "pytorch-2.4", "uri": "pytorch/pytorch:2.4.0-cuda12.1-cudnn9-runtime"},
    {"name": "python-3.11", "uri": "python:3.11-slim"},
]
NGC = "nvcr.io/nvidia/pytorch:24.05-py3"


def test_names_resolve_and_any_reference_passes_by_default() -> None:
    policy = ImagePolicy(static=STATIC)
    assert policy.resolve("pytorch-2.4") == STATIC[0]["uri"]
    assert policy.resolve(STATIC[1]["uri"]) == STATIC[1]["uri"]
    assert policy.resolve(NGC) == NGC
    assert policy.resolve("") == ""


def test_an_invalid_reference_is_refused_naming_the_field() -> None:
    with pytest.raises(SpecError) as error:
        ImagePolicy(static=STATIC).resolve("Not An Image!", where="--image")
    assert error.value.errors[0].path == "--image"


async def test_without_custom_images_only_the_catalogue_and_listed_registries_pass() -> None:
    policy = ImagePolicy(
        static=STATIC, custom=False, registry_hosts=frozenset({"harbor.example.com"})
    )
    assert policy.resolve("python-3.11") == "python:3.11-slim"
    assert policy.resolve("harbor.example.com/team/app:1") == "harbor.example.com/team/app:1"
    with pytest.raises(SpecError) as error:
        policy.resolve(NGC)
    assert "custom images are turned off" in error.value.errors[0].message
    assert "pytorch-2.4, python-3.11" in error.value.errors[0].message

    refused = await policy.errors(parse_job(image_job(NGC)).job)
    assert [e.path for e in refused] == ["prerequisites.0.uri"]
    assert await policy.errors(parse_job(image_job("python:3.11-slim")).job) == []


@pytest.mark.parametrize(
    ("custom", "status", "message"),
    [(True, 0, ""), (False, 2, "custom images are turned off")],
)
def test_kernelspec_install_takes_any_reference_unless_the_admin_says_no(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    custom: bool,
    status: int,
    message: str,
) -> None:
    config = tmp_path / "config"
    config.mkdir()
    (config / "jupyter_pai_config.json").write_text(
        json.dumps({"PAIConfig": {"custom_images": custom}})
    )
    monkeypatch.setenv("JUPYTER_CONFIG_PATH", str(config))
    monkeypatch.setenv("JUPYTER_DATA_DIR", str(tmp_path / "data"))
    argv = ["kernelspec", "install", "ngc", "--vc", "default", "--image", NGC]
    assert main(argv) == status
    assert message in capsys.readouterr().err
    written = tmp_path / "data" / "kernels" / "ngc" / "kernel.json"
    assert written.exists() == custom
    if custom:
        spec = json.loads(written.read_text())
        assert spec["metadata"]["kernel_provisioner"]["config"]["image"] == NGC
