"""OpenPAI's completion policy (pure): when the outcomes of a job's tasks end the job."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from jupyter_pai.backends.completion_policy import decide
from jupyter_pai.backends.models import JobState, TaskState
from jupyter_pai.spec import JobProtocol

W, S, F, R, X = (
    TaskState.WAITING,
    TaskState.SUCCEEDED,
    TaskState.FAILED,
    TaskState.RUNNING,
    TaskState.STOPPED,
)


@dataclass
class Task:
    role: str
    state: TaskState
    exit_code: int | None = None


def job(**roles: dict[str, Any]) -> JobProtocol:
    return JobProtocol.model_validate(
        {
            "protocolVersion": 2,
            "name": "j",
            "type": "job",
            "taskRoles": {
                name: {
                    "instances": spec.get("instances", 1),
                    "commands": ["true"],
                    **({"completion": spec["completion"]} if "completion" in spec else {}),
                }
                for name, spec in roles.items()
            },
        }
    )


def tasks(role: str, *states: TaskState, codes: tuple[int | None, ...] = ()) -> list[Task]:
    return [
        Task(role, state, codes[i] if i < len(codes) else (0 if state == S else None))
        for i, state in enumerate(states)
    ]


def test_nothing_decided_while_tasks_run() -> None:
    j = job(worker={"instances": 3})
    assert decide(j, tasks("worker", R, R, R)) is None
    assert decide(j, tasks("worker", S, S, R)) is None
    assert decide(j, tasks("worker", W, W, W)) is None


def test_all_succeeded_is_success() -> None:
    d = decide(job(worker={"instances": 2}), tasks("worker", S, S))
    assert d is not None
    assert (d.state, d.exit_code) == (JobState.SUCCEEDED, 0)
    assert d.reason == "2 of 2 worker instance(s) succeeded (minSucceededInstances=2)"


def test_one_failure_fails_by_default_with_its_exit_code() -> None:
    d = decide(job(worker={"instances": 3}), tasks("worker", R, F, R, codes=(None, 3)))
    assert d is not None
    assert (d.state, d.exit_code) == (JobState.FAILED, 3)
    assert d.reason == "1 of 3 worker instance(s) failed (minFailedInstances=1)"


def test_failure_without_an_exit_code_reports_one() -> None:
    d = decide(job(worker={}), tasks("worker", F, codes=(None,)))
    assert d is not None and (d.state, d.exit_code) == (JobState.FAILED, 1)


def test_min_succeeded_one_succeeds_at_the_first_success() -> None:
    j = job(worker={"instances": 3, "completion": {"minSucceededInstances": 1}})
    d = decide(j, tasks("worker", R, S, R))
    assert d is not None and d.state == JobState.SUCCEEDED


def test_min_failed_minus_one_never_fails_the_job() -> None:
    j = job(worker={"instances": 3, "completion": {"minFailedInstances": -1}})
    assert decide(j, tasks("worker", F, F, R, codes=(2, 2))) is None
    d = decide(j, tasks("worker", F, F, F, codes=(2, 2, 2)))
    assert d is not None and (d.state, d.exit_code) == (JobState.SUCCEEDED, 0)
    assert d.reason == "all tasks ended"


def test_min_failed_two_needs_two_failures() -> None:
    j = job(worker={"instances": 3, "completion": {"minFailedInstances": 2}})
    assert decide(j, tasks("worker", F, R, R, codes=(4,))) is None
    d = decide(j, tasks("worker", F, S, S, codes=(4,)))
    assert d is not None and d.state == JobState.SUCCEEDED
    d = decide(j, tasks("worker", F, F, R, codes=(4, 5)))
    assert d is not None and (d.state, d.exit_code) == (JobState.FAILED, 4)


def test_tensorflow_ps_never_completes_the_job_workers_do() -> None:
    j = job(ps={"completion": {"minSucceededInstances": -1}}, worker={"instances": 2})
    assert decide(j, tasks("ps", R) + tasks("worker", S, R)) is None
    d = decide(j, tasks("ps", R) + tasks("worker", S, S))
    assert d is not None and d.state == JobState.SUCCEEDED
    assert "worker" in d.reason
    # the ps ending by itself does not end the job while workers run
    assert decide(j, tasks("ps", S) + tasks("worker", R, R)) is None


def test_failure_in_any_role_fails_the_job() -> None:
    j = job(ps={"completion": {"minSucceededInstances": -1}}, worker={"instances": 2})
    d = decide(j, tasks("ps", F, codes=(137,)) + tasks("worker", R, R))
    assert d is not None and (d.state, d.exit_code) == (JobState.FAILED, 137)
    assert d.reason.startswith("1 of 1 ps")


def test_stopped_tasks_count_as_ended_but_not_as_outcomes() -> None:
    j = job(
        worker={
            "instances": 2,
            "completion": {"minFailedInstances": -1, "minSucceededInstances": -1},
        }
    )
    d = decide(j, tasks("worker", X, X))
    assert d is not None and d.state == JobState.SUCCEEDED and d.reason == "all tasks ended"


@pytest.mark.parametrize("states", [(), (R,)])
def test_no_decision_without_ended_tasks(states: tuple[TaskState, ...]) -> None:
    j = job(worker={"instances": 1, "completion": {"minSucceededInstances": -1}})
    assert decide(j, tasks("worker", *states)) is None
