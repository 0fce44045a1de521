"""The OpenPAI job protocol v2 as one pydantic model.

Field names are the protocol's own (camelCase) so that an OpenPAI job file and this model
read the same. Unknown fields are kept (``extra="allow"``) and reported as warnings by
:func:`jupyter_pai.spec.parse.parse_job`: OpenPAI jobs carry plugin sections we may not run.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

NAME_PATTERN = r"^[a-zA-Z0-9_-]+$"
ROLE_PATTERN = r"^[a-zA-Z_][a-zA-Z0-9_]*$"
PORT_LABEL_PATTERN = r"^[a-zA-Z_][a-zA-Z0-9_]*$"
DEFAULT_VIRTUAL_CLUSTER = "default"

NonNegInt = Annotated[int, Field(ge=0)]


class Model(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True, validate_default=True)


class RegistryAuth(Model):
    username: str | None = None
    password: str | None = None
    registryuri: str | None = None


class Callback(Model):
    event: Literal["taskStarts", "taskSucceeds"]
    commands: list[str] = Field(default_factory=list)


class Prerequisite(Model):
    name: str = Field(min_length=1)
    type: Literal["dockerimage", "script", "data", "output"]
    uri: str | list[str] | None = None
    auth: RegistryAuth | None = None
    plugin: str | None = None
    callbacks: list[Callback] = Field(default_factory=list)
    require: list[str] = Field(default_factory=list)
    failure_policy: Literal["ignore", "fail"] | None = Field(default=None, alias="failurePolicy")

    @model_validator(mode="after")
    def _uri_required(self) -> Prerequisite:
        if self.type == "dockerimage" and not self.uri:
            raise ValueError("a dockerimage prerequisite needs a uri (the image reference)")
        return self


class Completion(Model):
    min_failed_instances: int = Field(default=1, alias="minFailedInstances")
    min_succeeded_instances: int | None = Field(default=None, alias="minSucceededInstances")

    @field_validator("min_failed_instances", "min_succeeded_instances")
    @classmethod
    def _minus_one_or_positive(cls, v: int | None) -> int | None:
        if v is not None and v != -1 and v < 1:
            raise ValueError("must be -1 (never) or at least 1")
        return v


class ExtraContainerOptions(Model):
    shm_mb: NonNegInt = Field(default=512, alias="shmMB")
    infiniband: bool = False


class ResourcePerInstance(Model):
    cpu: Annotated[float, Field(ge=0)] = 1
    memory_mb: Annotated[int, Field(ge=0)] = Field(default=1024, alias="memoryMB")
    gpu: NonNegInt = 0
    ports: dict[str, NonNegInt] = Field(default_factory=dict)

    @field_validator("ports")
    @classmethod
    def _port_labels(cls, v: dict[str, int]) -> dict[str, int]:
        for label in v:
            if not re.match(PORT_LABEL_PATTERN, label):
                raise ValueError(
                    f"port label {label!r} must start with a letter or _ and hold only "
                    "letters, digits and _"
                )
        return v


class TaskRole(Model):
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
    commands: list[str] = Field(min_length=1)

    @field_validator("commands", mode="before")
    @classmethod
    def _command_string(cls, v: Any) -> Any:
        # A single string is a one-line command list; OpenPAI users write both.
        return [v] if isinstance(v, str) else v

    @property
    def min_succeeded(self) -> int:
        """Succeeded instances that complete the job; -1 means never by this role."""
        v = self.completion.min_succeeded_instances
        return self.instances if v is None else v

    @property
    def min_failed(self) -> int:
        return self.completion.min_failed_instances


class DeploymentRole(Model):
    pre_commands: list[str] = Field(default_factory=list, alias="preCommands")
    post_commands: list[str] = Field(default_factory=list, alias="postCommands")


class Deployment(Model):
    name: str = Field(min_length=1)
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
        if v is not None and not v.startswith("/"):
            raise ValueError("must be an absolute path such as /mnt/data")
        return v

    @property
    def effective_mount_path(self) -> str:
        return self.mount_path or f"/mnt/{self.name}"


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


class RuntimePlugin(Model):
    plugin: str
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


class JobProtocol(Model):
    """A job as OpenPAI protocol v2 describes it, with every default filled in."""

    protocol_version: Literal[2] = Field(alias="protocolVersion")
    name: str = Field(min_length=1, max_length=255, pattern=NAME_PATTERN)
    type: Literal["job"] = "job"
    version: str | None = None
    contributor: str | None = None
    description: str | None = None
    prerequisites: list[Prerequisite] = Field(default_factory=list)
    parameters: dict[str, Any] = Field(default_factory=dict)
    secrets: dict[str, Any] = Field(default_factory=dict)
    job_retry_count: NonNegInt = Field(default=0, alias="jobRetryCount")
    deployments: list[Deployment] = Field(default_factory=list)
    defaults: Defaults = Field(default_factory=Defaults)
    extras: Extras = Field(default_factory=Extras)
    task_roles: dict[str, TaskRole] = Field(alias="taskRoles", min_length=1)

    @field_validator("protocol_version", mode="before")
    @classmethod
    def _version_string(cls, v: Any) -> Any:
        return 2 if v in ("2", 2) else v

    @field_validator("version", mode="before")
    @classmethod
    def _version_text(cls, v: Any) -> Any:
        return str(v) if isinstance(v, (int, float)) else v

    @field_validator("task_roles")
    @classmethod
    def _role_names(cls, v: dict[str, TaskRole]) -> dict[str, TaskRole]:
        for role in v:
            if not re.match(ROLE_PATTERN, role):
                raise ValueError(
                    f"task role name {role!r} must start with a letter or _ and hold only "
                    "letters, digits and _"
                )
        return v

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

    def prerequisite(self, name: str) -> Prerequisite | None:
        return next((p for p in self.prerequisites if p.name == name), None)

    def image_uri(self, role: str) -> str | None:
        ref = self.task_roles[role].docker_image
        if ref is None:
            return None
        pre = self.prerequisite(ref)
        uri = pre.uri if pre is not None else None
        return uri if isinstance(uri, str) else None

    def deployment(self) -> Deployment | None:
        if self.defaults.deployment is None:
            return None
        return next((d for d in self.deployments if d.name == self.defaults.deployment), None)
