"""Kernelspecs that select the ``pai-provisioner``: what ``jupyter pai kernelspec install``
writes. JupyterLab's launcher shows the display name, so it carries the VC and GPUs."""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from ..errors import FieldError, SpecError
from .jobspec import KernelRequest, gpu_words

PROVISIONER = "pai-provisioner"


def display_name(request: KernelRequest, language: str = "Python 3") -> str:
    return f"{language} — {request.virtual_cluster}, {gpu_words(request)}"


def kernelspec(request: KernelRequest, name: str | None = None) -> dict[str, Any]:
    config: dict[str, Any] = {"virtual_cluster": request.virtual_cluster, "gpus": request.gpus}
    if request.gpu_type:
        config["gpu_type"] = request.gpu_type
    if request.image:
        config["image"] = request.image
    if request.cpu is not None:
        config["cpu"] = request.cpu
    if request.memory_mb is not None:
        config["memory_mb"] = request.memory_mb
    if request.storages:
        config["storages"] = list(request.storages)
    return {
        # Not run as such: the provisioner runs the launcher as the kernel job's command.
        "argv": ["python", "-m", "jupyter_pai.kernels.launcher"],
        "display_name": name or display_name(request),
        "language": "python",
        # Signals cannot cross to a pod; ipykernel handles interrupt_request messages.
        "interrupt_mode": "message",
        "metadata": {
            "kernel_provisioner": {"provisioner_name": PROVISIONER, "config": config},
            "debugger": False,
        },
    }


def check_name(name: str) -> None:
    if not name or not all(c.isalnum() or c in "-._" for c in name):
        raise SpecError(
            [FieldError("name", "use letters, digits, '-', '.' and '_' only")],
            message=f"invalid kernelspec name {name!r}",
        )


def install(
    name: str, request: KernelRequest, *, display: str | None = None, scope: str = "user"
) -> str:
    """Write the kernelspec with jupyter_client's KernelSpecManager; ``scope``: ``user``
    (~/.local/share/jupyter) or ``sys-prefix`` (this environment). Returns its folder."""
    from jupyter_client.kernelspec import KernelSpecManager

    check_name(name)
    if request.gpus < 0:
        raise SpecError([FieldError("gpus", "must be 0 or more")])
    with tempfile.TemporaryDirectory() as folder:
        Path(folder, "kernel.json").write_text(json.dumps(kernelspec(request, display), indent=2))
        where: str = KernelSpecManager().install_kernel_spec(
            folder,
            kernel_name=name,
            user=scope == "user",
            prefix=sys.prefix if scope == "sys-prefix" else None,
        )
    return where
