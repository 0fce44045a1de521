"""What the local backend keeps on disk for each job (``jobs/<id>/job.json``).

The spec itself lives beside it in ``spec.json`` (mode 0600, it holds the secrets); this
record holds only state, so listing jobs never reads a secret.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Literal

from pydantic import BaseModel, Field

from ..models import JobState, TaskState


def now() -> datetime:
    return datetime.now(timezone.utc)


class TaskRecord(BaseModel):
    role: str
    index: int
    state: TaskState = TaskState.WAITING
    gpu_request: int = 0
    port_request: dict[str, int] = Field(default_factory=dict)
    gpus: list[str] = Field(default_factory=list)
    ports: dict[str, list[int]] = Field(default_factory=dict)
    pid: int | None = None
    exit_code: int | None = None
    exit_reason: str | None = None
    retries: int = 0
    started_time: datetime | None = None
    completed_time: datetime | None = None

    @property
    def key(self) -> str:
        return f"{self.role}-{self.index}"


class JobRecord(BaseModel):
    id: str
    name: str
    user: str
    virtual_cluster: str
    kind: Literal["job", "kernel"] = "job"
    state: JobState = JobState.WAITING
    sub_state: str | None = None
    waiting_reason: str | None = None
    submission_time: datetime = Field(default_factory=now)
    launched_time: datetime | None = None
    completed_time: datetime | None = None
    exit_code: int | None = None
    retries: int = 0
    total_gpus: int = 0
    total_tasks: int = 0
    total_roles: int = 0
    total_cpu: float = 0
    total_memory_mb: int = 0
    working_dir: str
    master_port: int | None = None
    tasks: list[TaskRecord] = Field(default_factory=list)
    supervisor_pid: int | None = None
    supervisor_start: str | None = None
    stop_requested: bool = False
    # Why the job was preempted ("preempted: VC b reclaimed 2 GPUs"): set when admission
    # decides it, kept while it waits to run again, cleared when it is admitted again.
    preemption: str | None = None
    preemptions: int = 0

    @property
    def allocated_gpus(self) -> list[str]:
        """GPU slots this job holds: those of its tasks while it is RUNNING or STOPPING."""
        if self.state not in (JobState.RUNNING, JobState.STOPPING):
            return []
        return [g for t in self.tasks for g in t.gpus]

    @property
    def allocated_ports(self) -> list[int]:
        if self.state not in (JobState.RUNNING, JobState.STOPPING):
            return []
        ports = [p for t in self.tasks for ps in t.ports.values() for p in ps]
        return ports + ([self.master_port] if self.master_port else [])

    def task(self, role: str, index: int) -> TaskRecord:
        for t in self.tasks:
            if t.role == role and t.index == index:
                return t
        raise KeyError(f"{role}-{index}")
