"""What backends return and the REST API serialises: one set of models for both backends.

JSON uses camelCase (like OpenPAI's REST API) while Python uses snake_case; dump with
``model_dump(mode="json", by_alias=True)``. The TypeScript client mirrors these names.
"""

from __future__ import annotations

from datetime import datetime
from enum import Enum
from typing import Any, Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel


class ApiModel(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True)


class JobState(str, Enum):
    WAITING = "WAITING"
    RUNNING = "RUNNING"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    STOPPING = "STOPPING"
    STOPPED = "STOPPED"

    @property
    def terminal(self) -> bool:
        return self in (JobState.SUCCEEDED, JobState.FAILED, JobState.STOPPED)


class TaskState(str, Enum):
    WAITING = "WAITING"
    RUNNING = "RUNNING"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    STOPPED = "STOPPED"

    @property
    def terminal(self) -> bool:
        return self in (TaskState.SUCCEEDED, TaskState.FAILED, TaskState.STOPPED)


class Resources(ApiModel):
    gpu: int = 0
    cpu: float = 0
    memory_mb: int = Field(default=0, alias="memoryMB")


class TaskStatus(ApiModel):
    role: str
    index: int
    state: TaskState
    node: str | None = None
    ip: str | None = None
    gpu_number: int = 0
    # Device ids where the backend knows them (local); Kubernetes does not say which.
    gpus: list[str] = Field(default_factory=list)
    ports: dict[str, list[int]] = Field(default_factory=dict)
    exit_code: int | None = None
    exit_reason: str | None = None
    retries: int = 0
    started_time: datetime | None = None
    completed_time: datetime | None = None


class JobSummary(ApiModel):
    id: str
    name: str
    user: str
    state: JobState
    sub_state: str | None = None
    virtual_cluster: str
    retries: int = 0
    submission_time: datetime
    launched_time: datetime | None = None
    completed_time: datetime | None = None
    exit_code: int | None = None
    total_gpu_number: int = 0
    total_task_number: int = 0
    total_task_role_number: int = 0
    waiting_reason: str | None = None
    #: "kernel": a remote kernel's job (jupyter_pai.kernels), started by a kernel provisioner.
    kind: Literal["job", "kernel"] = "job"


class JobDetail(JobSummary):
    spec: dict[str, Any]
    tasks: list[TaskStatus] = Field(default_factory=list)


class JobEvent(ApiModel):
    time: datetime
    type: str = "Normal"  # Normal | Warning, as in Kubernetes events
    reason: str
    message: str
    source: str = "job"  # "job" or "<role>-<index>"


class GpuTypeUsage(ApiModel):
    """One GPU type (``H100-80GB``, ``A100-40GB-MIG-1g.5gb``, ``T4-SHARED``) as a VC sees
    it: GPUs of the type its jobs may use, held now, and free now."""

    name: str
    #: the full product name (GPU Feature Discovery's ``nvidia.com/gpu.product``)
    product: str | None = None
    capacity: int = 0
    used: int = 0
    free: int = 0


class VirtualCluster(ApiModel):
    """``capacity``: the most its jobs may hold at once (its guarantee, plus what it may
    borrow); ``free``: what a job could start with now without preempting anyone."""

    name: str
    capacity: Resources
    used: Resources
    free: Resources
    running_jobs: int = 0
    queued_jobs: int = 0
    queued: Resources = Field(default_factory=Resources)
    # OpenPAI's VC sharing, where the backend has it (None/0/false elsewhere): GPUs the VC
    # is guaranteed, holds beyond that on loan (preemptible), and has lent to other VCs.
    guaranteed_gpus: int | None = None
    borrowed_gpus: int = 0
    lent_gpus: int = 0
    may_borrow: bool = False
    may_lend: bool = False
    description: str | None = None
    #: by GPU type, where the backend knows types (empty: untyped GPUs)
    gpu_types: list[GpuTypeUsage] = Field(default_factory=list)


class Image(ApiModel):
    name: str
    uri: str
    description: str | None = None
    gpu: bool = True


class Storage(ApiModel):
    name: str
    mount_path: str
    read_only: bool = False
    description: str | None = None


class StorageEntry(ApiModel):
    name: str
    path: str
    type: str  # "file" | "directory"
    size: int | None = None
    modified: datetime | None = None


class UploadState(ApiModel):
    """How far an upload to ``path`` has come: ``received`` bytes of ``total`` (None: not
    said yet). ``complete``: the file is under its final name; until then the bytes wait
    under a hidden temporary name in the same folder, and a cut upload resumes at
    ``received``."""

    storage: str
    path: str
    received: int
    total: int | None = None
    complete: bool = False


class StorageListing(ApiModel):
    storage: str
    path: str
    type: str = "directory"
    entries: list[StorageEntry]


class Info(ApiModel):
    backend: str
    flavor: str | None = None
    version: str
    user: str
    namespace: str | None = None
    gpu_slots: int | None = None
    #: Tasks are processes of the server's machine (its files, its Python), not pods.
    tasks_run_here: bool = False


class GpuUsage(ApiModel):
    """GPU use of a task or job at one time or over a window: utilisation averaged over
    its GPUs (%), GPU memory used summed over them (MiB). ``None``: not measured."""

    gpu_percent: float | None = None
    memory_mb: float | None = Field(default=None, alias="memoryMB")


class TaskUtilisation(ApiModel):
    role: str
    index: int
    gpu_number: int = 0
    #: The latest sample; ``None`` where nothing measures this task's GPUs.
    current: GpuUsage | None = None
    #: Average utilisation and peak memory over the last hour (of what was sampled).
    last_hour: GpuUsage | None = None


class JobUtilisation(ApiModel):
    """``GET jobs/{id}/utilisation``: per task and for the job (tasks' GPUs together).
    Missing measurements are ``None``, never zeros; ``note`` says why (no GPU on this
    machine, Prometheus unreachable or not configured)."""

    job_id: str
    source: str | None = None  # "nvml" | "prometheus"
    current: GpuUsage | None = None
    last_hour: GpuUsage | None = None
    tasks: list[TaskUtilisation] = Field(default_factory=list)
    note: str | None = None


class NodeResources(ApiModel):
    """One node (this machine on the local backend): GPUs, CPU and memory its
    allocatable and what the jobs seen here request, and those jobs' ids."""

    name: str
    gpu_total: int = 0
    gpu_used: int = 0
    gpu_free: int = 0
    cpu_allocatable: float = 0
    cpu_requested: float = 0
    memory_mb_allocatable: int = Field(default=0, alias="memoryMBAllocatable")
    memory_mb_requested: int = Field(default=0, alias="memoryMBRequested")
    jobs: list[str] = Field(default_factory=list)
    #: Measured use (%), where measured: CPU busy, memory in use, mean of the GPUs' busy.
    cpu_percent: float | None = None
    memory_percent: float | None = None
    gpu_percent: float | None = None
    #: Why CPU and memory use are not measured, if they are not.
    utilisation_note: str | None = None


class AbnormalJob(ApiModel):
    """A running job OpenPAI's rule flags: running too long, or holding GPUs it barely
    uses (thresholds: ``c.Backend.abnormal_*``)."""

    job: JobSummary
    reasons: list[str]
    #: The job's mean GPU utilisation over the last hour, where measured.
    gpu_percent_last_hour: float | None = None
    #: Whether this user may stop it (their own job).
    may_stop: bool = False


Item = TypeVar("Item", bound=BaseModel)


class ItemList(ApiModel, Generic[Item]):
    """The one envelope of every list the API answers: ``{"items": [...]}``, as Kubernetes
    lists are, so a client reads every list the same way and a field (a page token) can be
    added later without breaking it."""

    items: list[Item]


class JobList(ItemList[JobSummary]):
    """``GET jobs``: newest first; ``total`` jobs match the filters, and ``continue`` (absent
    on the last page) asks for the next page of ``limit``."""

    total: int | None = None
    continue_: str | None = Field(default=None, alias="continue")


class JobChange(ApiModel):
    """One event of the ``job-changes`` stream: a job appeared, changed (state, retries,
    waiting reason, any listed field) or was deleted, with its summary (the last one known
    for a deleted job)."""

    type: Literal["added", "modified", "deleted"]
    job: JobSummary


class JobEventList(ItemList[JobEvent]):
    """``GET jobs/{id}/events``: oldest first."""


class VirtualClusterList(ItemList[VirtualCluster]):
    """``GET virtual-clusters``."""


class ImageList(ItemList[Image]):
    """``GET images``: the configured catalogue."""


class StorageList(ItemList[Storage]):
    """``GET storage``."""


class NodeList(ItemList[NodeResources]):
    """``GET nodes``: by name."""


class AbnormalJobList(ItemList[AbnormalJob]):
    """``GET abnormal-jobs``: longest running first."""


class FieldWarning(ApiModel):
    """Something the server accepted but did not take as written (an ignored field, a
    converted v1 job), at the dotted ``path`` of the input (empty: the whole job)."""

    path: str
    message: str


class SubmitResult(ApiModel):
    """``POST jobs``: the created job and what was not taken as written."""

    job: JobDetail
    warnings: list[FieldWarning]


class NotebookJobRequest(ApiModel):
    """``POST notebook-jobs``: run a notebook of the server's file tree as a job."""

    #: The notebook, relative to the server's root (as the file browser names it).
    path: str = Field(min_length=1)
    #: Injected as papermill does: after the cell tagged ``parameters``.
    params: dict[str, str] = Field(default_factory=dict)
    gpus: int = Field(default=0, ge=0)
    #: the GPU type (``H100-80GB``); none: any
    gpu_type: str | None = None
    vc: str | None = None
    image: str | None = None
    #: ``NAME[/folder]``: write the executed notebook into this storage instead.
    storage: str | None = None
    #: The job's name (default: the notebook's name and the time).
    name: str | None = None


class NotebookJobResult(ApiModel):
    """The notebook's job, its warnings, and where the executed notebook will be."""

    job: JobDetail
    warnings: list[FieldWarning]
    #: Its path in the server's file tree (what JupyterLab opens), when it is written there.
    output: str | None = None
    #: Where the task writes it (a path inside a storage's mount for ``storage``).
    output_location: str


class ConvertResult(ApiModel):
    """``POST convert``: the protocol-v2 document a job stands for, without submitting it."""

    #: What the user wrote: protocol v2, the short form, or OpenPAI v1 JSON.
    format: Literal["v2", "short", "v1"]
    #: The protocol-v2 document (secrets' values hidden).
    job: dict[str, Any]
    #: Each warning ("converted from an OpenPAI v1 job", …).
    warnings: list[FieldWarning]


class JobFilter(ApiModel):
    vc: str | None = None
    state: list[JobState] | None = None
    user: str | None = None
    keyword: str | None = None

    def matches(self, job: JobSummary) -> bool:
        if self.vc and job.virtual_cluster != self.vc:
            return False
        if self.state and job.state not in self.state:
            return False
        if self.user and job.user != self.user:
            return False
        if self.keyword:
            needle = self.keyword.lower()
            if needle not in job.name.lower() and needle not in job.id.lower():
                return False
        return True
