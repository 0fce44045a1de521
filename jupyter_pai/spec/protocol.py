"""The OpenPAI job protocol v2 as one pydantic model.

Field names are the protocol's own (camelCase) so that an OpenPAI job file and this model
read the same. Unknown fields are kept (``extra="allow"``) and reported as warnings by
:func:`jupyter_pai.spec.parse.parse_job`: OpenPAI jobs carry plugin sections we may not run.

Leniencies (each is what an OpenPAI user writes in practice, and each is mirrored in the
exported JSON Schema): ``protocolVersion: "2"``, a numeric ``name`` or ``version``, a single
string where a list of command lines is expected, and an empty section (``completion:`` with
nothing under it) meaning "all defaults".
"""

from __future__ import annotations

import functools
import posixpath
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationInfo,
    WithJsonSchema,
    field_validator,
    model_validator,
)

NAME_PATTERN = r"^[a-zA-Z0-9_-]+$"
ROLE_PATTERN = r"^[a-zA-Z_][a-zA-Z0-9_]*$"
PORT_LABEL_PATTERN = r"^[a-zA-Z_][a-zA-Z0-9_]*$"
DEFAULT_VIRTUAL_CLUSTER = "default"

#: What each pattern means, in words, for error messages.
PATTERN_HELP = {
    NAME_PATTERN: "letters, digits, _ and - only",
    ROLE_PATTERN: "a letter or _ first, then letters, digits and _ only",
}

#: HiveD priorities OpenPAI maps ``extras.hivedScheduler.jobPriorityClass`` to.
PRIORITY_CLASSES = {"crit": 120, "prod": 100, "test": 10, "oppo": -1}

PREREQUISITE_TYPES = ("dockerimage", "script", "data", "output")


def _number_to_text(v: Any) -> Any:
    # YAML reads ``name: 2024`` and ``version: 1.0`` as numbers.
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return str(v)
    return v


def _one_line_to_list(v: Any) -> Any:
    # A single string is a one-line command list; OpenPAI users write both.
    return [v] if isinstance(v, str) else v


def _minus_one_or_more(v: Any) -> Any:
    # OpenPAI reads 0 (like null) as "the default"; -1 as "no limit"; below that is an error.
    if isinstance(v, int) and not isinstance(v, bool) and v < -1:
        raise ValueError(f"must be -1 (no limit), 0 (the default) or at least 1 (got {v})")
    return v


NonNegInt = Annotated[int, Field(ge=0)]
JobName = Annotated[
    str,
    BeforeValidator(_number_to_text),
    StringConstraints(min_length=1, max_length=255, pattern=NAME_PATTERN),
    WithJsonSchema({"type": "string", "minLength": 1, "maxLength": 255, "pattern": NAME_PATTERN}),
]
RoleName = Annotated[str, StringConstraints(pattern=ROLE_PATTERN)]
PortLabel = Annotated[str, StringConstraints(pattern=PORT_LABEL_PATTERN)]
FreeText = Annotated[
    str,
    BeforeValidator(_number_to_text),
    WithJsonSchema({"type": ["string", "number"]}),
]
CommandLines = Annotated[
    list[str],
    BeforeValidator(_one_line_to_list),
    WithJsonSchema({"anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]}),
]
NonEmptyCommandLines = Annotated[
    list[str],
    BeforeValidator(_one_line_to_list),
    Field(min_length=1),
    WithJsonSchema(
        {
            "anyOf": [
                {"type": "string"},
                {"type": "array", "items": {"type": "string"}, "minItems": 1},
            ]
        }
    ),
]
InstanceLimit = Annotated[
    int,
    BeforeValidator(_minus_one_or_more),
    WithJsonSchema({"type": "integer", "minimum": -1}),
]


ProtocolVersion = Annotated[
    Literal[2],
    BeforeValidator(lambda v: 2 if (v == "2" or (v == 2 and not isinstance(v, bool))) else v),
    WithJsonSchema({"enum": [2, "2"]}),
]


class Model(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True, validate_default=True)

    @model_validator(mode="before")
    @classmethod
    def _empty_means_default(cls, data: Any) -> Any:
        """``completion:`` with nothing under it (YAML null) means "the defaults"."""
        # Every spec read (a job's detail, its view) passes here once per object in it.
        if not isinstance(data, dict) or None not in data.values():
            return data
        known = _field_names(cls)
        return {k: v for k, v in data.items() if not (v is None and k in known)}


@functools.cache
def _field_names(cls: type[BaseModel]) -> frozenset[str]:
    """A model's fields by name and by alias."""
    return frozenset(
        n for name, info in cls.model_fields.items() for n in (name, info.alias) if n is not None
    )


class RegistryAuth(Model):
    username: str | None = None
    password: str | None = None
    registryuri: str | None = None


class Callback(Model):
    event: Literal["taskStarts", "taskSucceeds"]
    commands: CommandLines = Field(default_factory=list)


class Prerequisite(Model):
    protocol_version: ProtocolVersion | None = Field(default=None, alias="protocolVersion")
    name: str = Field(min_length=1)
    type: Literal["dockerimage", "script", "data", "output"]
    uri: str | list[str] | None = None
    auth: RegistryAuth | None = None
    plugin: str | None = None
    callbacks: list[Callback] = Field(default_factory=list)
    require: list[str] = Field(default_factory=list)
    failure_policy: Literal["ignore", "fail"] | None = Field(default=None, alias="failurePolicy")
    version: FreeText | None = None
    contributor: str | None = None
    description: str | None = None

    def as_written(self) -> dict[str, Any]:
        """The fields the job gave (plugin-specific ones too), as markers read them."""
        return self.model_dump(mode="json", by_alias=True, exclude_unset=True)

    @field_validator("uri", mode="before")
    @classmethod
    def _uri_shape(cls, v: Any) -> Any:
        if v is None or isinstance(v, str):
            return v
        if isinstance(v, list) and all(isinstance(u, str) for u in v):
            return v
        raise ValueError(f"must be text or a list of text (got {type(v).__name__})")

    @field_validator("uri")
    @classmethod
    def _uri_required(cls, v: str | list[str] | None, info: ValidationInfo) -> Any:
        if info.data.get("type") == "dockerimage" and (not isinstance(v, str) or not v.strip()):
            raise ValueError("a dockerimage prerequisite needs a uri (the image reference)")
        return v


class Completion(Model):
    min_failed_instances: InstanceLimit = Field(default=1, alias="minFailedInstances")
    min_succeeded_instances: InstanceLimit | None = Field(
        default=None, alias="minSucceededInstances"
    )


class ExtraContainerOptions(Model):
    shm_mb: NonNegInt = Field(default=512, alias="shmMB")
    infiniband: bool = False


class ResourcePerInstance(Model):
    cpu: Annotated[float, Field(ge=0)] = 1
    memory_mb: NonNegInt = Field(default=1024, alias="memoryMB")
    gpu: NonNegInt = 0
    ports: dict[PortLabel, NonNegInt] = Field(default_factory=dict)


class TaskRole(Model):
    protocol_version: ProtocolVersion | None = Field(default=None, alias="protocolVersion")
    instances: Annotated[int, Field(ge=1)] = 1
    completion: Completion = Field(default_factory=Completion)
    task_retry_count: NonNegInt = Field(default=0, alias="taskRetryCount")
    docker_image: str | None = Field(default=None, alias="dockerImage")
    prerequisites: list[str] = Field(default_factory=list)
    data: str | None = None
    output: str | None = None
    script: str | None = None
    extra_container_options: ExtraContainerOptions = Field(
        default_factory=ExtraContainerOptions, alias="extraContainerOptions"
    )
    resource_per_instance: ResourcePerInstance = Field(
        default_factory=ResourcePerInstance, alias="resourcePerInstance"
    )
    commands: NonEmptyCommandLines

    @property
    def min_succeeded(self) -> int:
        """Succeeded instances that complete the job; -1 means wait for all of them. Unset
        or 0 is every instance (OpenPAI reads 0 as unset)."""
        return self.completion.min_succeeded_instances or self.instances

    @property
    def min_failed(self) -> int:
        """Failed instances that fail the job; -1 means this role never fails it. 0 is the
        default, 1 (as on OpenPAI)."""
        return self.completion.min_failed_instances or 1


class DeploymentRole(Model):
    pre_commands: CommandLines = Field(default_factory=list, alias="preCommands")
    post_commands: CommandLines = Field(default_factory=list, alias="postCommands")


class Deployment(Model):
    protocol_version: ProtocolVersion | None = Field(default=None, alias="protocolVersion")
    name: str = Field(min_length=1)
    version: FreeText | None = None
    contributor: str | None = None
    description: str | None = None
    task_roles: dict[str, DeploymentRole] = Field(default_factory=dict, alias="taskRoles")


class Defaults(Model):
    virtual_cluster: str | None = Field(default=None, alias="virtualCluster", min_length=1)
    deployment: str | None = None


class StorageMount(Model):
    name: str = Field(min_length=1)
    mount_path: str | None = Field(default=None, alias="mountPath")
    share: bool = True
    read_only: bool = Field(default=False, alias="readOnly")

    @field_validator("mount_path")
    @classmethod
    def _absolute(cls, v: str | None) -> str | None:
        if v is None:
            return v
        if not v.startswith("/"):
            raise ValueError(f"must be an absolute path such as /mnt/data (got {v!r})")
        if ".." in v.split("/"):
            raise ValueError(f"must not contain '..' (got {v!r})")
        if posixpath.normpath(v) == "/":
            raise ValueError("must not be / (the container's root)")
        return v

    @property
    def effective_mount_path(self) -> str:
        return posixpath.normpath(self.mount_path) if self.mount_path else f"/mnt/{self.name}"


class HivedRole(Model):
    sku_type: str | None = Field(default=None, alias="skuType")
    pinned_cell_id: str | None = Field(default=None, alias="pinnedCellId")
    affinity_group_name: str | None = Field(default=None, alias="affinityGroupName")
    sku_num: NonNegInt | None = Field(default=None, alias="skuNum")


class HivedScheduler(Model):
    job_priority_class: Literal["crit", "prod", "test", "oppo"] = Field(
        default="test", alias="jobPriorityClass"
    )
    task_roles: dict[str, HivedRole] = Field(default_factory=dict, alias="taskRoles")

    @property
    def priority(self) -> int:
        """HiveD priority of the class (crit 120, prod 100, test 10, oppo -1)."""
        return PRIORITY_CLASSES[self.job_priority_class]


class RuntimePlugin(Model):
    plugin: str = Field(min_length=1)
    parameters: dict[str, Any] = Field(default_factory=dict)
    failure_policy: Literal["ignore", "fail"] | None = Field(default=None, alias="failurePolicy")
    taskroles: list[str] | None = None


class StatusNotification(Model):
    running: bool = False
    succeeded: bool = False
    stopped: bool = False
    failed: bool = False
    retried: bool = False


class Extras(Model):
    gang_allocation: bool = Field(default=True, alias="gangAllocation")
    hived_scheduler: HivedScheduler | None = Field(default=None, alias="hivedScheduler")
    storages: list[StorageMount] = Field(default_factory=list)
    job_status_change_notification: StatusNotification | None = Field(
        default=None, alias="jobStatusChangeNotification"
    )
    runtime_plugins: list[RuntimePlugin] = Field(
        default_factory=list, alias="com.microsoft.pai.runtimeplugin"
    )
    #: Which client submitted the job (OpenPAI's web portal plugins set it).
    submit_from: str | None = Field(default=None, alias="submitFrom")
    #: jupyter-pai's own: ``kernel`` marks the job of a remote kernel (jupyter_pai.kernels),
    #: so lists and VC views can tell it from a batch job. Left out of dumps unless set.
    kind: Literal["job", "kernel"] = Field(
        default="job", alias="jupyterPaiKind", exclude_if=lambda kind: kind == "job"
    )


class JobProtocol(Model):
    """A job as OpenPAI protocol v2 describes it, with every default filled in."""

    protocol_version: ProtocolVersion = Field(alias="protocolVersion")
    name: JobName
    type: Literal["job"]
    version: FreeText | None = None
    contributor: str | None = None
    description: str | None = None
    prerequisites: list[Prerequisite] = Field(default_factory=list)
    parameters: dict[str, Any] = Field(default_factory=dict)
    secrets: dict[str, Any] = Field(default_factory=dict)
    job_retry_count: NonNegInt = Field(default=0, alias="jobRetryCount")
    deployments: list[Deployment] = Field(default_factory=list)
    defaults: Defaults = Field(default_factory=Defaults)
    extras: Extras = Field(default_factory=Extras)
    task_roles: dict[RoleName, TaskRole] = Field(alias="taskRoles", min_length=1)

    # -- derived views used by every backend -------------------------------------------

    @property
    def virtual_cluster(self) -> str:
        return self.defaults.virtual_cluster or DEFAULT_VIRTUAL_CLUSTER

    @property
    def role_names(self) -> list[str]:
        return list(self.task_roles)

    @property
    def total_instances(self) -> int:
        return sum(r.instances for r in self.task_roles.values())

    @property
    def total_gpus(self) -> int:
        return sum(r.instances * r.resource_per_instance.gpu for r in self.task_roles.values())

    @property
    def gang_allocation(self) -> bool:
        return self.extras.gang_allocation

    @property
    def priority(self) -> int:
        """HiveD-style priority: the class's when ``extras.hivedScheduler`` is set, else test."""
        hived = self.extras.hived_scheduler
        return hived.priority if hived is not None else PRIORITY_CLASSES["test"]

    def gpu_type(self, role: str) -> str | None:
        """The GPU type ``role``'s instances run on, if the job names one: OpenPAI's
        ``extras.hivedScheduler.taskRoles.<role>.skuType``, which the short form's
        ``gpuType`` and OpenPAI v1's ``gpuType`` also become. Every flavor reads it here."""
        hived = self.extras.hived_scheduler
        task = hived.task_roles.get(role) if hived is not None else None
        return task.sku_type if task is not None else None

    def prerequisite(self, name: str, type: str | None = None) -> Prerequisite | None:
        """The prerequisite called ``name`` (of ``type``: names are unique per type)."""
        return next(
            (p for p in self.prerequisites if p.name == name and (type is None or p.type == type)),
            None,
        )

    def image_uri(self, role: str) -> str | None:
        ref = self.task_roles[role].docker_image
        if ref is None:
            return None
        pre = self.prerequisite(ref, "dockerimage")
        uri = pre.uri if pre is not None else None
        return uri if isinstance(uri, str) else None

    def deployment(self) -> Deployment | None:
        if self.defaults.deployment is None:
            return None
        return next((d for d in self.deployments if d.name == self.defaults.deployment), None)

    def storage(self, name: str) -> StorageMount | None:
        return next((s for s in self.extras.storages if s.name == name), None)
