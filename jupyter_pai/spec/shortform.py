"""The short form: ``name, image, command, gpus, instances, vc`` expanding to protocol v2.

It is sugar for notebook users and the CLI (``jupyter pai submit --image … -- cmd``); the
result is validated by the same model as any OpenPAI job. Errors name the short-form key
the user wrote (``gpus``, ``command``), not the protocol path it expands to.

A document is short-form when it has neither ``protocolVersion`` nor ``taskRoles`` and has
at least one of the short-form-only keys (``image``, ``command``/``commands``,
``gpus``/``gpu``, ``instances``, ``vc``). Keys that are not short-form keys are copied to the
protocol document as they are, so protocol sections (``extras``, ``prerequisites``,
``deployments``…) may be mixed in, and unknown keys come back as warnings under their own
names.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import AliasChoices, BeforeValidator, Field

from .protocol import (
    FreeText,
    JobName,
    Model,
    NonEmptyCommandLines,
    NonNegInt,
    PortLabel,
    RoleName,
    StorageMount,
)

DEFAULT_ROLE = "worker"
IMAGE_PREREQUISITE = "image"
SHORT_ONLY_KEYS = ("image", "command", "commands", "gpus", "gpu", "instances", "vc")


def _names_to_mounts(v: Any) -> Any:
    # ``storages: [data, {name: home, readOnly: true}]``: a bare name is a mount with defaults.
    if isinstance(v, list):
        return [{"name": s} if isinstance(s, str) else s for s in v]
    return v


class ShortForm(Model):
    """One task role, N instances: the short form of a job."""

    name: JobName
    image: str | None = Field(default=None, min_length=1)
    command: NonEmptyCommandLines = Field(validation_alias=AliasChoices("command", "commands"))
    gpus: NonNegInt = Field(default=0, validation_alias=AliasChoices("gpus", "gpu"))
    instances: Annotated[int, Field(ge=1)] = 1
    vc: str | None = Field(default=None, min_length=1)
    cpu: Annotated[float, Field(ge=0)] | None = None
    memory_mb: NonNegInt | None = Field(default=None, alias="memoryMB")
    ports: dict[PortLabel, NonNegInt] = Field(default_factory=dict)
    parameters: dict[str, Any] = Field(default_factory=dict)
    secrets: dict[str, Any] = Field(default_factory=dict)
    role: RoleName = DEFAULT_ROLE
    gang: bool = True
    storages: Annotated[list[StorageMount], BeforeValidator(_names_to_mounts)] = Field(
        default_factory=list
    )
    retries: NonNegInt = 0
    task_retries: NonNegInt = Field(default=0, alias="taskRetries")
    description: FreeText | None = None


SHORT_KEYS = {
    "name",
    "image",
    "command",
    "commands",
    "gpus",
    "gpu",
    "instances",
    "vc",
    "cpu",
    "memoryMB",
    "ports",
    "parameters",
    "secrets",
    "role",
    "gang",
    "storages",
    "retries",
    "taskRetries",
    "description",
}


def is_short_form(doc: Mapping[str, Any]) -> bool:
    if "protocolVersion" in doc or "taskRoles" in doc:
        return False
    return any(key in doc for key in SHORT_ONLY_KEYS)


def _role(doc: Mapping[str, Any]) -> str:
    role = doc.get("role")
    return role if isinstance(role, str) and role else DEFAULT_ROLE


def expand(doc: Mapping[str, Any]) -> dict[str, Any]:
    """Return the protocol-v2 document for a short-form one."""
    role = _role(doc)
    command = doc["commands"] if "commands" in doc else doc.get("command")
    resource: dict[str, Any] = {"gpu": doc["gpus"] if "gpus" in doc else doc.get("gpu", 0)}
    for key in ("cpu", "memoryMB", "ports"):
        if key in doc:
            resource[key] = doc[key]
    task_role: dict[str, Any] = {
        "instances": doc.get("instances", 1),
        "resourcePerInstance": resource,
    }
    if command is not None:
        task_role["commands"] = command
    if "taskRetries" in doc:
        task_role["taskRetryCount"] = doc["taskRetries"]
    job: dict[str, Any] = {
        "protocolVersion": 2,
        "name": doc.get("name"),
        "type": "job",
        "taskRoles": {role: task_role},
    }
    for key, value in doc.items():
        if key not in SHORT_KEYS:
            job[key] = value
    if "image" in doc:
        pres = job.get("prerequisites")
        pres = list(pres) if isinstance(pres, list) else []
        pres.append({"name": IMAGE_PREREQUISITE, "type": "dockerimage", "uri": doc["image"]})
        job["prerequisites"] = pres
        task_role["dockerImage"] = IMAGE_PREREQUISITE
    if "vc" in doc:
        job["defaults"] = {**_mapping(job.get("defaults")), "virtualCluster": doc["vc"]}
    extras = _mapping(job.get("extras"))
    if "gang" in doc:
        extras["gangAllocation"] = doc["gang"]
    if "storages" in doc:
        extras["storages"] = [
            {"name": s} if isinstance(s, str) else s for s in doc["storages"] or []
        ]
    if extras:
        job["extras"] = extras
    for key in ("parameters", "secrets", "description"):
        if key in doc:
            job[key] = doc[key]
    if "retries" in doc:
        job["jobRetryCount"] = doc["retries"]
    return job


def _mapping(value: Any) -> dict[str, Any]:
    return dict(value) if isinstance(value, Mapping) else {}


def short_path(doc: Mapping[str, Any], path: str) -> str:
    """The short-form key a protocol path of :func:`expand`'s result came from."""
    role = _role(doc)
    base = f"taskRoles.{role}"
    command_key = "commands" if "commands" in doc else "command"
    gpu_key = "gpu" if "gpu" in doc and "gpus" not in doc else "gpus"
    prefixes: list[tuple[str, str]] = [
        (f"{base}.resourcePerInstance.gpu", gpu_key),
        (f"{base}.commands", command_key),
        (f"{base}.instances", "instances"),
        (f"{base}.dockerImage", "image"),
    ]
    for prefix, short in (
        (f"{base}.resourcePerInstance.cpu", "cpu"),
        (f"{base}.resourcePerInstance.memoryMB", "memoryMB"),
        (f"{base}.resourcePerInstance.ports", "ports"),
        (f"{base}.taskRetryCount", "taskRetries"),
        ("defaults.virtualCluster", "vc"),
        ("extras.gangAllocation", "gang"),
        ("extras.storages", "storages"),
        ("jobRetryCount", "retries"),
        (base, "role"),
    ):
        if short in doc:
            prefixes.append((prefix, short))
    if isinstance(doc.get(command_key), str):
        prefixes.insert(0, (f"{base}.commands.0", command_key))
    if "image" in doc:
        pres = doc.get("prerequisites")
        index = len(pres) if isinstance(pres, list) else 0
        prefixes.insert(0, (f"prerequisites.{index}.uri", "image"))
        prefixes.insert(1, (f"prerequisites.{index}", "image"))
    for prefix, short in prefixes:
        if path == prefix or path.startswith(prefix + "."):
            return short + path[len(prefix) :]
    return path
