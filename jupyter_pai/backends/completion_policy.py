"""OpenPAI's completion policy: when a job has succeeded or failed, from its tasks' outcomes.

Per role, ``minFailedInstances`` failed instances fail the job and ``minSucceededInstances``
succeeded ones complete it (-1: never, by this role); when every task has ended and no role
decided, the job succeeded (FrameworkController's rule, which OpenPAI runs on).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from ..spec.protocol import JobProtocol
from .models import JobState, TaskState


class TaskOutcome(Protocol):
    @property
    def role(self) -> str: ...
    @property
    def state(self) -> TaskState: ...
    @property
    def exit_code(self) -> int | None: ...


@dataclass(frozen=True)
class Decision:
    state: JobState
    reason: str
    exit_code: int
    #: Which rule decided: a role's ``minFailedInstances`` ("failed") or
    #: ``minSucceededInstances`` ("succeeded"), or every task having ended ("all", no role).
    #: A scheduler that enforces some rules itself is asked about exactly this one.
    rule: str = "all"
    role: str | None = None


def decide(job: JobProtocol, tasks: Sequence[TaskOutcome]) -> Decision | None:
    for role, spec in job.task_roles.items():
        mine = [t for t in tasks if t.role == role]
        failed = [t for t in mine if t.state == TaskState.FAILED]
        succeeded = [t for t in mine if t.state == TaskState.SUCCEEDED]
        if spec.min_failed != -1 and len(failed) >= spec.min_failed:
            code = next((t.exit_code for t in failed if t.exit_code), 1) or 1
            return Decision(
                JobState.FAILED,
                f"{len(failed)} of {spec.instances} {role} instance(s) failed "
                f"(minFailedInstances={spec.min_failed})",
                code,
                rule="failed",
                role=role,
            )
        if spec.min_succeeded != -1 and len(succeeded) >= spec.min_succeeded:
            return Decision(
                JobState.SUCCEEDED,
                f"{len(succeeded)} of {spec.instances} {role} instance(s) succeeded "
                f"(minSucceededInstances={spec.min_succeeded})",
                0,
                rule="succeeded",
                role=role,
            )
    if tasks and all(t.state.terminal for t in tasks):
        return Decision(JobState.SUCCEEDED, "all tasks ended", 0)
    return None
