"""What a remote kernel asks for (a kernelspec's provisioner config) and the one-task job
of kind ``kernel`` that runs it. Pure: no I/O."""

from __future__ import annotations

import shlex
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..spec.protocol import JobProtocol
from .launcher import (
    CURVE_VARIABLES,
    KEY_VARIABLE,
    PORT_LABEL,
    PORT_NAMES,
    inline_command,
    start_commands,
)

ROLE = "kernel"
SECRET = "kernelKey"
CURVE_SECRETS = ("curvePublicKey", "curveSecretKey")


@dataclass(frozen=True)
class KernelRequest:
    """The kernelspec's ``metadata.kernel_provisioner.config``."""

    virtual_cluster: str
    gpus: int = 0
    #: the GPU type (``H100-80GB``); empty: any
    gpu_type: str = ""
    image: str = ""
    cpu: float | None = None
    memory_mb: int | None = None
    storages: Sequence[str] = field(default_factory=tuple)
    idle_seconds: float = 600.0


def gpu_words(request: KernelRequest) -> str:
    """``2 GPUs``, ``1 H100-80GB``."""
    if request.gpu_type:
        return f"{request.gpus} {request.gpu_type}"
    return f"{request.gpus} GPU" + ("" if request.gpus == 1 else "s")


def kernel_job(
    request: KernelRequest,
    *,
    name: str,
    key: str,
    image_uri: str,
    in_process_launcher: bool,
    python: str = "python3",
    curve: tuple[str, str] | None = None,
) -> JobProtocol:
    """The kernel's job. ``in_process_launcher``: the task runs this installation's launcher
    module with this interpreter (local backend); otherwise the launcher's source runs with
    the image's ``python`` (a pod)."""
    if in_process_launcher:
        python = sys.executable
        launcher = f"{shlex.quote(python)} -m jupyter_pai.kernels.launcher"
    else:
        launcher = inline_command(python)
    # The key goes into a shell variable (never an argument, never exported) from the job's
    # Secret; the shell writes it into the connection file and unsets it.
    secrets = {SECRET: key}
    assignments = [f'{KEY_VARIABLE}="<% $secrets.{SECRET} %>"']
    if curve is not None:  # only on Kubernetes, where a secret is a variable, never text
        for variable, name, value in zip(CURVE_VARIABLES, CURVE_SECRETS, curve, strict=True):
            secrets[name] = value
            assignments.append(f'{variable}="<% $secrets.{name} %>"')
    commands = [
        *assignments,
        *start_commands(launcher, python, request.idle_seconds, curve is not None),
    ]
    resources: dict[str, Any] = {"gpu": request.gpus, "ports": {PORT_LABEL: len(PORT_NAMES)}}
    if request.cpu is not None:
        resources["cpu"] = request.cpu
    if request.memory_mb is not None:
        resources["memoryMB"] = request.memory_mb
    role: dict[str, Any] = {"instances": 1, "resourcePerInstance": resources, "commands": commands}
    doc: dict[str, Any] = {
        "protocolVersion": 2,
        "name": name,
        "type": "job",
        "description": f"remote kernel: {gpu_words(request)} in VC {request.virtual_cluster}",
        "secrets": secrets,
        "defaults": {"virtualCluster": request.virtual_cluster},
        "extras": {
            "jupyterPaiKind": "kernel",
            "storages": [{"name": s} for s in request.storages],
        },
        "taskRoles": {ROLE: role},
    }
    if request.gpu_type:  # OpenPAI's field for a role's GPU type, read by every flavor
        hived = {"taskRoles": {ROLE: {"skuType": request.gpu_type}}}
        doc["extras"]["hivedScheduler"] = hived
    if image_uri:
        doc["prerequisites"] = [{"type": "dockerimage", "name": "image", "uri": image_uri}]
        role["dockerImage"] = "image"
    return JobProtocol.model_validate(doc)
