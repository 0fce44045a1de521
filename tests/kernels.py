"""Helpers for the remote-kernel tests on the local backend: a kernelspec folder of
``pai`` kernelspecs, and polling the local jobs with deadlines."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

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
    repo = str(Path(__file__).resolve().parents[2])
    path = os.environ.get("PYTHONPATH", "")
    return {
        "JUPYTER_PATH": str(tmp),
        "JUPYTER_PAI_STATE_DIR": str(tmp / "pai-state"),
        "JUPYTER_PAI_LOCAL_GPUS": str(gpus),
        # A history database of the test's own (the conformance suite searches it).
        "IPYTHONDIR": str(tmp / "ipython"),
        "PYTHONPATH": os.pathsep.join(p for p in (repo, path) if p),
    }
