"""The short form: ``name, image, command, gpus, instances, vc`` expanding to protocol v2.

It is sugar for notebook users and the CLI (``jupyter pai submit --image … -- cmd``); the
result is validated by the same model as any OpenPAI job. Errors name the short-form key
the user wrote (``gpus``, ``command``), not the protocol path it expands to.

A document is short-form when it has neither ``protocolVersion`` nor ``taskRoles`` and has
at least one of the short-form-only keys (``image``, ``command``/``commands``,
``gpus``/``gpu``, ``gpuType``, ``instances``, ``vc``). Keys that are not short-form keys are
copied to the protocol document as they are, so protocol sections (``extras``,
``prerequisites``, ``deployments``…) may be mixed in, and unknown keys come back as warnings
under their own names.

A GPU type is chosen with ``gpuType: H100-80GB`` (one GPU unless ``gpus`` says more) or
``gpus: "H100-80GB:2"``; either becomes OpenPAI's
``extras.hivedScheduler.taskRoles.<role>.skuType``, which every flavor reads through
:meth:`JobProtocol.gpu_type <jupyter_pai.spec.protocol.JobProtocol.gpu_type>`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    AliasChoices,
    BeforeValidator,
    Field,
    PlainValidator,
    SkipValidation,
    ValidationInfo,
    WithJsonSchema,
    field_validator,
)
from pydantic.json_schema import SkipJsonSchema

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
SHORT_ONLY_KEYS = ("image", "command", "commands", "gpus", "gpu", "gpuType", "instances", "vc")

#: A GPU type's name: a Kubernetes label value (``H100-80GB``, ``A100-40GB-MIG-1g.5gb``, a
#: HiveD SKU such as ``DT``), since flavors put it in node selectors and resource flavors.
GPU_TYPE_PATTERN = r"^[A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?$"
GPU_REQUEST_PATTERN = r"^\s*(?:[A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?:)?\s*[0-9]+\s*$"
_GPU_TYPE = re.compile(GPU_TYPE_PATTERN)


def parse_gpu_request(text: str) -> tuple[str | None, int]:
    """``"2"`` → ``(None, 2)``; ``"H100-80GB:2"`` → ``("H100-80GB", 2)``. A ValueError
    says what is wrong: an empty type or count, a count that is not a whole number ≥ 0 (≥ 1
    with a type), a type name that is not letters, digits, ``.``, ``_`` and ``-``."""
    text = text.strip()
    if not text:
        raise ValueError("is empty: give a GPU count (2) or TYPE:COUNT (H100-80GB:2)")
    gpu_type, colon, count_text = text.rpartition(":")
    count_text = count_text.strip()
    if colon and not gpu_type:
        raise ValueError(f"{text!r} has no GPU type before ':' (write TYPE:COUNT, H100-80GB:2)")
    if not count_text:
        raise ValueError(f"{text!r} has no GPU count after ':' (write TYPE:COUNT, H100-80GB:2)")
    if not count_text.isdigit() or not count_text.isascii():
        least = 1 if colon else 0
        raise ValueError(
            f"{text!r}: the GPU count must be a whole number ≥ {least} (got {count_text!r})"
        )
    count = int(count_text)
    if not colon:
        return None, count
    check_gpu_type(gpu_type)
    if count == 0:
        raise ValueError(f"{text!r}: a GPU type needs a count of at least 1")
    return gpu_type, count


def check_gpu_type(name: str) -> str:
    """``name`` if it is a GPU type's name, else a ValueError saying why."""
    if not _GPU_TYPE.match(name):
        raise ValueError(
            f"{name!r} is not a GPU type name: letters, digits, '.', '_' and '-', "
            "a letter or digit first and last, at most 63 characters"
        )
    return name


def _gpu_request(v: Any) -> tuple[str | None, int] | None:
    # ``gpus: 2`` or ``gpus: "H100-80GB:2"``: kept as (type, count) so that ``gpuType`` can
    # be checked against the type written here; None when not given.
    if v is None:
        return v
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    if isinstance(v, int) and not isinstance(v, bool):
        if v < 0:
            raise ValueError(f"must be ≥ 0 (got {v})")
        return None, v
    if isinstance(v, str) and ":" in v:
        return parse_gpu_request(v)
    if isinstance(v, str) and v.strip().isdigit() and v.strip().isascii():
        return None, int(v)
    raise ValueError(f"must be a whole number or TYPE:COUNT such as H100-80GB:2 (got {v!r})")


GpuRequest = Annotated[
    tuple[str | None, int] | None,
    PlainValidator(_gpu_request),
    WithJsonSchema(
        {
            "anyOf": [
                {"type": "integer", "minimum": 0},
                {"type": "string", "pattern": GPU_REQUEST_PATTERN},
            ],
            "description": "GPUs per instance: a count, or TYPE:COUNT (H100-80GB:2)",
        }
    ),
]
GpuTypeName = Annotated[
    str,
    AfterValidator(check_gpu_type),
    WithJsonSchema(
        {
            "type": "string",
            "pattern": GPU_TYPE_PATTERN,
            "description": "the GPU type (H100-80GB, a HiveD SKU) of every instance",
        }
    ),
]


def _names_to_mounts(v: Any) -> Any:
    # ``storages: [data, {name: home, readOnly: true}]``: a bare name is a mount with defaults.
    if isinstance(v, list):
        return [{"name": s} if isinstance(s, str) else s for s in v]
    return v


class ShortForm(Model):
    """One task role, N instances: the short form of a job."""

    #: Read only by the GPU type checks below (a ``skuType`` there must agree); the
    #: protocol model validates it. First, so that those checks see it.
    extras: SkipJsonSchema[SkipValidation[Any]] = None
    role: RoleName = DEFAULT_ROLE
    name: JobName
    image: str | None = Field(default=None, min_length=1)
    command: NonEmptyCommandLines = Field(validation_alias=AliasChoices("command", "commands"))
    gpus: GpuRequest = Field(
        default=None,
        validation_alias=AliasChoices("gpus", "gpu"),
        json_schema_extra=lambda schema: schema.update(default=0),
    )
    instances: Annotated[int, Field(ge=1)] = 1
    vc: str | None = Field(default=None, min_length=1)
    cpu: Annotated[float, Field(ge=0)] | None = None
    memory_mb: NonNegInt | None = Field(default=None, alias="memoryMB")
    ports: dict[PortLabel, NonNegInt] = Field(default_factory=dict)
    parameters: dict[str, Any] = Field(default_factory=dict)
    secrets: dict[str, Any] = Field(default_factory=dict)
    gang: bool = True
    storages: Annotated[list[StorageMount], BeforeValidator(_names_to_mounts)] = Field(
        default_factory=list
    )
    retries: NonNegInt = 0
    task_retries: NonNegInt = Field(default=0, alias="taskRetries")
    description: FreeText | None = None
    # After ``gpus``, so that its check sees the type written there.
    gpu_type: GpuTypeName | None = Field(default=None, alias="gpuType")

    @field_validator("gpus")
    @classmethod
    def _gpus_type_agrees(
        cls, v: tuple[str | None, int] | None, info: ValidationInfo
    ) -> tuple[str | None, int] | None:
        if v is not None and v[0] is not None:
            _check_sku(v[0], info)
        return v

    @field_validator("gpu_type")
    @classmethod
    def _gpu_type_agrees(cls, v: str | None, info: ValidationInfo) -> str | None:
        if v is None:
            return v
        gpus = info.data.get("gpus")
        if gpus is not None and gpus[0] is not None and gpus[0] != v:
            raise ValueError(f"is {v!r} but gpus names {gpus[0]!r}: give the type once")
        if gpus is not None and gpus[1] == 0:
            raise ValueError(f"{v!r} is of no use with gpus: 0; give at least 1 GPU")
        _check_sku(v, info)
        return v


def _check_sku(gpu_type: str, info: ValidationInfo) -> None:
    role = info.data.get("role", DEFAULT_ROLE)
    sku = _sku_type(info.data.get("extras"), role)
    if sku is not None and sku != gpu_type:
        raise ValueError(
            f"names GPU type {gpu_type!r} but extras.hivedScheduler.taskRoles.{role}.skuType "
            f"is {sku!r}: give the type once"
        )


def _sku_type(extras: Any, role: str) -> Any:
    hived = extras.get("hivedScheduler") if isinstance(extras, Mapping) else None
    roles = hived.get("taskRoles") if isinstance(hived, Mapping) else None
    task = roles.get(role) if isinstance(roles, Mapping) else None
    return task.get("skuType") if isinstance(task, Mapping) else None


SHORT_KEYS = {
    "name",
    "image",
    "command",
    "commands",
    "gpus",
    "gpu",
    "gpuType",
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
    gpu_type, gpus = _gpus(doc)
    resource: dict[str, Any] = {"gpu": gpus}
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
    if gpu_type is not None:
        extras["hivedScheduler"] = _with_sku(extras.get("hivedScheduler"), role, gpu_type)
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


def _gpus(doc: Mapping[str, Any]) -> tuple[str | None, Any]:
    """(type, count) of ``gpus``/``gpu`` and ``gpuType``; ``gpuType`` alone is one GPU. A
    value :class:`ShortForm` would refuse is passed on as it is."""
    written = doc["gpus"] if "gpus" in doc else doc.get("gpu")
    gpu_type = doc.get("gpuType") if isinstance(doc.get("gpuType"), str) else None
    try:
        request = _gpu_request(written)
    except ValueError:
        return gpu_type, written
    named, count = request or (None, 1 if gpu_type is not None else 0)
    return gpu_type or named, count


def _with_sku(hived: Any, role: str, gpu_type: str) -> dict[str, Any]:
    """``extras.hivedScheduler`` with ``taskRoles.<role>.skuType``, OpenPAI's field for the
    GPU type, set and everything else kept."""
    out = _mapping(hived)
    roles = _mapping(out.get("taskRoles"))
    roles[role] = {**_mapping(roles.get(role)), "skuType": gpu_type}
    out["taskRoles"] = roles
    return out


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
        (f"extras.hivedScheduler.taskRoles.{role}.skuType", "gpuType"),
        ("extras.storages", "storages"),
        ("jobRetryCount", "retries"),
        (base, "role"),
    ):
        if short in doc:
            prefixes.append((prefix, short))
    if "gpuType" not in doc and isinstance(doc.get(gpu_key), str):
        prefixes.append((f"extras.hivedScheduler.taskRoles.{role}.skuType", gpu_key))
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
