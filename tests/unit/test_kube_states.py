"""OpenPAI states and waiting reasons from Kubernetes / Volcano objects (pure mapping)."""

from __future__ import annotations

import json
from typing import Any

from jupyter_pai.backends.kubernetes.flavors import VolcanoFlavor
from jupyter_pai.backends.kubernetes.jobviews import SUMMARY_FIELDS, summary
from jupyter_pai.backends.kubernetes.naming import (
    ANN_OUTCOME,
    ANN_POD_CREATED,
    ANN_STOP,
    make_names,
)
from jupyter_pai.backends.kubernetes.pods import PodOptions
from jupyter_pai.backends.kubernetes.states import VcUsage, job_view, waiting_reason
from jupyter_pai.backends.models import JobState, JobSummary, TaskState
from jupyter_pai.spec import parse_job

JOB = parse_job(
    """
protocolVersion: 2
name: t
type: job
defaults: {virtualCluster: research}
taskRoles:
  ps: {instances: 1, completion: {minSucceededInstances: -1}, commands: [sleep 1],
       resourcePerInstance: {gpu: 0}}
  worker: {instances: 2, taskRetryCount: 1, commands: [sleep 1], resourcePerInstance: {gpu: 2}}
"""
).job
NAMES = make_names(JOB, "alice")


def pod(role: str, index: int, phase: str, *, code: int | None = None, t: str = "1", **extra: Any):
    status: dict[str, Any] = {
        "phase": phase,
        "podIP": "10.1.1.1",
        "startTime": "2024-01-01T00:00:00Z",
    }
    if code is not None:
        status["containerStatuses"] = [
            {
                "state": {
                    "terminated": {
                        "exitCode": code,
                        "reason": "Error" if code else "Completed",
                        "finishedAt": "2024-01-01T00:01:00Z",
                    }
                },
                "restartCount": 0,
            }
        ]
    meta = {"name": f"{role}-{index}-{t}", "creationTimestamp": f"2024-01-01T00:00:0{t}Z", **extra}
    return (role, index, {"metadata": meta, "spec": {"nodeName": "n1"}, "status": status})


def view(pods: list[Any], annotations: dict[str, str] | None = None, status: Any = None):
    primary = {"metadata": {"annotations": annotations or {}}, "status": status or {}}
    flavor = VolcanoFlavor(PodOptions(namespace="alice"))
    return job_view(JOB, NAMES, primary, pods, waiting_reason="why", flavor=flavor)


def test_no_pods_is_waiting_with_the_reason() -> None:
    v = view([])
    assert v.state == JobState.WAITING and v.waiting_reason == "why"
    assert [t.state for t in v.tasks] == [TaskState.WAITING] * 3


def test_running_tasks_carry_node_ip_gpus() -> None:
    v = view([pod("ps", 0, "Running"), pod("worker", 0, "Running"), pod("worker", 1, "Pending")])
    assert v.state == JobState.RUNNING
    w0 = v.tasks[1]
    assert (w0.state, w0.node, w0.ip, w0.gpus) == (TaskState.RUNNING, "n1", "10.1.1.1", 2)
    assert v.tasks[2].state == TaskState.WAITING


def test_workers_succeeding_complete_the_job_while_ps_runs() -> None:
    v = view(
        [
            pod("ps", 0, "Running"),
            pod("worker", 0, "Succeeded", code=0),
            pod("worker", 1, "Succeeded", code=0),
        ]
    )
    assert v.state == JobState.SUCCEEDED and v.exit_code == 0
    assert v.active_pods == ("ps-0-1",)  # the backend stops what is left


def test_a_failure_within_task_retries_is_not_a_job_failure() -> None:
    v = view(
        [pod("ps", 0, "Running"), pod("worker", 0, "Failed", code=3), pod("worker", 1, "Running")]
    )
    assert v.state == JobState.RUNNING
    assert v.tasks[1].state == TaskState.WAITING and "exit code 3" in (v.tasks[1].exit_reason or "")


def test_retries_exhausted_fail_the_job_with_the_exit_code() -> None:
    v = view(
        [
            pod("ps", 0, "Running"),
            pod("worker", 0, "Failed", code=3, t="1"),
            pod("worker", 0, "Failed", code=4, t="2"),
            pod("worker", 1, "Running"),
        ]
    )
    assert v.state == JobState.FAILED and v.exit_code == 4
    assert v.tasks[1].retries == 1 and v.tasks[1].exit_code == 4


def test_stop_gives_stopping_then_stopped() -> None:
    mark = {ANN_STOP: "2024-01-02T00:00:00Z"}
    deleting = pod("ps", 0, "Running", deletionTimestamp="2024-01-02T00:00:00Z")
    assert view([deleting], mark).state == JobState.STOPPING
    stopped = view([], mark)
    assert stopped.state == JobState.STOPPED
    assert all(t.state == TaskState.STOPPED for t in stopped.tasks)
    assert stopped.completed is not None


def test_volcano_aborted_is_stopped_and_phases_map() -> None:
    assert view([], status={"state": {"phase": "Aborted"}}).state == JobState.STOPPED
    assert view([], status={"state": {"phase": "Failed"}, "retryCount": 2}).state == JobState.FAILED
    assert view([], status={"state": {"phase": "Failed"}, "retryCount": 2}).retries == 2
    assert view([], status={"state": {"phase": "Pending"}}).state == JobState.WAITING


def test_recorded_outcome_wins() -> None:
    outcome = json.dumps({"state": "FAILED", "reason": "1 of 2 worker failed", "exitCode": 7})
    v = view([], {ANN_OUTCOME: outcome})
    assert (v.state, v.exit_code, v.sub_state) == (JobState.FAILED, 7, "1 of 2 worker failed")


def test_reason_from_queue_usage() -> None:
    reason = waiting_reason(JOB, vc=VcUsage("research", capacity=8, used=6), events=[])
    assert reason == "queue research: 6 of 8 GPUs in use, needs 4"


def test_reason_from_a_quota_event() -> None:
    event = {
        "type": "Warning",
        "reason": "FailedCreate",
        "lastTimestamp": "2024-01-01T00:00:00Z",
        "message": 'Error creating: pods "x" is forbidden: exceeded quota: vc-research, '
        "requested: requests.nvidia.com/gpu=2, used: requests.nvidia.com/gpu=8, "
        "limited: requests.nvidia.com/gpu=8",
    }
    reason = waiting_reason(JOB, vc=None, events=[event])
    assert reason == "queue research: 8 of 8 GPUs in use, needs 4"


def test_reason_from_scheduling_failures() -> None:
    event = {
        "type": "Warning",
        "reason": "FailedScheduling",
        "message": "0/5 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, 4 Insufficient nvidia.com/gpu. preemption: not eligible.",
    }
    reason = waiting_reason(JOB, vc=VcUsage("research", 8, 0), events=[event])
    assert reason.startswith("no node has 2 free GPUs")
    group = {
        "status": {
            "conditions": [
                {
                    "type": "Unschedulable",
                    "status": "True",
                    "message": "3/3 tasks in gang unschedulable: 2 Insufficient cpu",
                }
            ]
        }
    }
    assert "cpu" in waiting_reason(JOB, vc=None, events=[], pod_group=group)


def test_closed_queue_and_default_reason() -> None:
    assert "closed" in waiting_reason(JOB, vc=VcUsage("research", 8, 0, state="Closed"), events=[])
    assert "scheduler" in waiting_reason(JOB, vc=VcUsage("research", 8, 0), events=[])


def test_pods_volcano_kills_while_ending_are_stopped_not_failed() -> None:
    """CompleteJob deletes the ps: it may exit non-zero on its way out; that is no failure
    (ps has minFailedInstances 1), the workers' success stays the verdict."""
    killed = pod("ps", 0, "Failed", code=137, deletionTimestamp="2024-01-01T00:02:00Z")
    done = [pod("worker", 0, "Succeeded", code=0), pod("worker", 1, "Succeeded", code=0)]
    v = view([killed, *done], status={"state": {"phase": "Completing"}})
    assert v.state == JobState.SUCCEEDED
    assert v.sub_state == "2 of 2 worker instance(s) succeeded (minSucceededInstances=2)"
    assert v.tasks[0].state == TaskState.STOPPED
    assert v.decision is not None and (v.decision.role, v.decision.rule) == ("worker", "succeeded")
    # Outside an ending, a pod its deletion stopped waits for its replacement (preempted,
    # evicted); a deleted pod that failed on its own is a failure.
    running = {"state": {"phase": "Running"}}
    assert view([killed, *done], status=running).tasks[0].state == TaskState.WAITING
    own = pod("ps", 0, "Failed", code=3, deletionTimestamp="2024-01-01T00:02:00Z")
    assert view([own, *done], status=running).state == JobState.FAILED


def test_a_pod_its_deletion_stopped_is_no_failure_of_the_task() -> None:
    """A kubelet writes Failed, exit 143 or 137, for a pod it stops because it was deleted
    (preempted, evicted): the task goes on in a new pod, or stops with the job."""
    when = "2024-01-01T00:02:00Z"
    for code in (137, 143):
        preempted = pod("ps", 0, "Failed", code=code, deletionTimestamp=when)
        v = view([preempted, pod("worker", 0, "Running"), pod("worker", 1, "Running")])
        assert v.state == JobState.RUNNING, code
        ps = v.tasks[0]
        assert (ps.state, ps.exit_code, ps.completed) == (TaskState.WAITING, None, None)
        stopped = view([preempted], {ANN_STOP: when})
        assert stopped.state == JobState.STOPPED
        assert stopped.tasks[0].state == TaskState.STOPPED
    # Killed for memory is the task's own failure, deleted or not.
    oom = pod("ps", 0, "Failed", code=137, deletionTimestamp=when)
    oom[2]["status"]["containerStatuses"][0]["state"]["terminated"]["reason"] = "OOMKilled"
    assert view([oom, pod("worker", 0, "Running"), pod("worker", 1, "Running")]).state == (
        JobState.FAILED
    )


def test_events_since_compare_times_not_text() -> None:
    from jupyter_pai.backends.kubernetes.jobviews import events_since

    created = "2026-11-23T14:00:01Z"
    same_second = {"eventTime": "2026-11-23T14:00:01.123456Z"}  # kube-scheduler's Scheduled
    later = {"lastTimestamp": "2026-11-23T14:00:02Z"}
    earlier = {"lastTimestamp": "2026-11-23T13:59:59Z"}  # a resubmitted job's predecessor
    undated: dict[str, object] = {}
    assert events_since([same_second, later, earlier, undated], created) == [
        same_second,
        later,
        undated,
    ]
    assert events_since([earlier], None) == [earlier]


def _archive(role: str, index: int, created: str) -> Any:
    meta = {"name": f"log-{role}-{index}-{created}", "annotations": {ANN_POD_CREATED: created}}
    return (role, index, {"metadata": meta})


def test_kept_logs_of_evicted_pods_are_attempts_not_spent_retries() -> None:
    """Two evictions of worker 0 kept its logs (oldest first); then a failure: within
    taskRetryCount 1 the task is still retried, since evictions are not failures."""
    primary = {"metadata": {"annotations": {}}, "status": {}}
    v = job_view(
        JOB,
        NAMES,
        primary,
        [pod("ps", 0, "Running"), pod("worker", 0, "Failed", code=3), pod("worker", 1, "Running")],
        archives=[
            _archive("worker", 0, "2024-01-01T00:00:02Z"),
            _archive("worker", 0, "2024-01-01T00:00:01Z"),
        ],
    )
    w0 = v.tasks[1]
    assert w0.archived_logs == (
        "log-worker-0-2024-01-01T00:00:01Z",
        "log-worker-0-2024-01-01T00:00:02Z",
    )
    assert w0.retries == 2 and w0.state == TaskState.WAITING
    assert v.tasks[2].archived_logs == () and v.tasks[2].retries == 0


def test_cached_summaries_share_one_set_of_their_field_names() -> None:
    primary = {"metadata": {"annotations": {}, "creationTimestamp": "2024-01-01T00:00:00Z"}}
    flavor = VolcanoFlavor(PodOptions(namespace="alice"))
    v = job_view(JOB, NAMES, primary, [], waiting_reason="why", flavor=flavor)
    first, second = (summary(primary, JOB, NAMES, v) for _ in range(2))
    assert first.model_fields_set is second.model_fields_set is SUMMARY_FIELDS
    assert SUMMARY_FIELDS == set(JobSummary.model_fields)
    # What it says is what a summary of its own set says.
    own = JobSummary.model_validate(first.model_dump())
    assert own.model_fields_set is not SUMMARY_FIELDS
    assert first.model_dump_json(exclude_unset=True) == own.model_dump_json(exclude_unset=True)
    assert first.total_gpu_number == 4 and first.submission_time.year == 2024
