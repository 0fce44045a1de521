"""Kubernetes objects → OpenPAI's job and task states, and why a job waits.

Pure functions over plain dicts (objects as the API returns them), so every rule is unit
tested without a cluster. Task states come from pods (the truth on every flavor); the job
state from OpenPAI's completion policy over the tasks, the stop mark, and what the
scheduler's own object of the job says, as its flavor reads it (:class:`PrimaryReader`)."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from types import MappingProxyType
from typing import Any, Protocol

from ...spec.protocol import JobProtocol
from ..completion_policy import Decision, decide
from ..envcontract import parse_port_list
from ..models import JobState, TaskState
from .naming import ANN_OUTCOME, ANN_POD_CREATED, ANN_STOP, JobNames

Obj = dict[str, Any]


@dataclass(frozen=True)
class Ending:
    """The scheduler's own account that it ends a job."""

    #: SUCCEEDED or FAILED once it has ended the job; None while it is still ending it
    #: (the pods it deletes meanwhile were killed, they did not fail), or where it stops it.
    outcome: JobState | None = None
    #: It stops the job, as a user's stop does.
    stopped: bool = False


class PrimaryReader(Protocol):
    """What the scheduler's own object of a job says of it (a flavor reads it)."""

    def ended(self, primary: Obj) -> Ending | None: ...
    def phase(self, primary: Obj) -> str | None: ...
    def restarts(self, primary: Obj) -> int: ...


NO_PORTS: Mapping[str, list[int]] = MappingProxyType({})


# Slots: a namespace's thousands of jobs each keep a view and its tasks in the cache.
@dataclass(slots=True)
class Task:
    role: str
    index: int
    state: TaskState = TaskState.WAITING
    node: str | None = None
    ip: str | None = None
    gpus: int = 0
    exit_code: int | None = None
    exit_reason: str | None = None
    retries: int = 0
    started: datetime | None = None
    completed: datetime | None = None
    pod: str | None = None
    #: label → ports, as the pod's environment contract says. Read-only, and tuples below:
    #: most tasks have none of each, and an empty one then costs nothing.
    ports: Mapping[str, list[int]] = field(default_factory=lambda: NO_PORTS)
    # The failed pods this one replaced, oldest first: attempts 0, 1, … of the task.
    earlier_pods: tuple[str, ...] = ()
    # ConfigMaps keeping the logs of evicted attempts (``logarchive``), oldest first: they
    # come before ``earlier_pods`` and count as attempts, not against taskRetryCount.
    archived_logs: tuple[str, ...] = ()


@dataclass
class VcUsage:
    """One virtual cluster's GPUs as the scheduler sees them."""

    name: str
    capacity: int | None  # None: no cap
    used: int
    state: str = "Open"


@dataclass(slots=True)
class JobView:
    state: JobState
    sub_state: str | None
    tasks: list[Task]
    retries: int = 0
    exit_code: int | None = None
    waiting_reason: str | None = None
    launched: datetime | None = None
    completed: datetime | None = None
    active_pods: tuple[str, ...] = ()
    #: OpenPAI's completion policy, where it decided the state (not a recorded outcome).
    decision: Decision | None = None


def now() -> str:
    """The current time as Kubernetes writes timestamps."""
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(value: Any) -> datetime | None:
    if not value:
        return None
    if isinstance(value, datetime):
        return value
    return datetime.fromisoformat(str(value).replace("Z", "+00:00"))


def _termination(pod: Obj, which: str = "state") -> Obj | None:
    """How a container of the pod ended: its current ``state``, or its ``lastState`` (the
    run before a restart in place)."""
    for cs in (pod.get("status") or {}).get("containerStatuses") or []:
        term = (cs.get(which) or {}).get("terminated")
        if term:
            return dict(term)
    return None


#: Exit codes of a container its kubelet stopped (SIGKILL, SIGTERM), or never found to stop.
_STOPPED_EXIT_CODES = (137, 143)


def killed_by_deletion(pod: Obj) -> bool:
    """Whether a deleted pod ended Failed because its deletion stopped it (preempted,
    evicted, replaced), not on its own: a kubelet writes Failed for such a pod before it
    goes, its containers ended by SIGTERM or SIGKILL. An OOM kill is the task's own."""
    if not (pod.get("metadata") or {}).get("deletionTimestamp"):
        return False
    if (pod.get("status") or {}).get("phase") != "Failed":
        return False
    term = _termination(pod)
    return (
        term is not None
        and term.get("reason") != "OOMKilled"
        and int(term.get("exitCode") or 0) in _STOPPED_EXIT_CODES
    )


def _retries_spent_in_place(pod: Obj, retries: int) -> bool:
    """A pod restarted in place (``restartPolicy: OnFailure``) more often than the task's
    ``taskRetryCount``, and not succeeded since."""
    in_place = (pod.get("spec") or {}).get("restartPolicy") == "OnFailure"
    succeeded = (pod.get("status") or {}).get("phase") == "Succeeded"
    return in_place and not succeeded and _restarts(pod) > retries


def _restarts(pod: Obj) -> int:
    return sum(
        int(cs.get("restartCount") or 0)
        for cs in (pod.get("status") or {}).get("containerStatuses") or []
    )


def pod_task_state(pod: Obj) -> TaskState:
    phase = (pod.get("status") or {}).get("phase") or "Pending"
    if phase == "Succeeded":
        return TaskState.SUCCEEDED
    if phase == "Failed":
        return TaskState.FAILED
    if phase == "Running":
        return TaskState.RUNNING
    return TaskState.WAITING


def _created(pod: Obj) -> str:
    return str((pod.get("metadata") or {}).get("creationTimestamp") or "")


def _pod_created(archive: Obj) -> str:
    return str(((archive.get("metadata") or {}).get("annotations") or {}).get(ANN_POD_CREATED))


def pod_ports(pod: Obj) -> dict[str, list[int]]:
    """The ports the pod's task holds, from ``PAI_CONTAINER_HOST_PORT_LIST`` in its env."""
    for container in (pod.get("spec") or {}).get("containers") or []:
        for var in container.get("env") or []:
            if var.get("name") == "PAI_CONTAINER_HOST_PORT_LIST" and "value" in var:
                return parse_port_list(str(var["value"]))
    return {}


def tasks_from_pods(
    job: JobProtocol,
    names: JobNames,
    pods: Sequence[tuple[str | None, int | None, Obj]],
    *,
    stopped: bool,
    killed: bool = False,
    archives: Sequence[tuple[str | None, int | None, Obj]] = (),
) -> list[Task]:
    """One task per instance in the spec, from the newest pod of each (role slug, index);
    failed pods beyond the newest count as retries, kept logs of evicted pods
    (``archives``) as earlier attempts. ``killed``: the scheduler is ending the job, so a
    deleted pod that has not succeeded was stopped, whatever its exit."""
    by_slug = {slug: role for role, slug in names.roles.items()}
    grouped: dict[tuple[str, int], list[Obj]] = {}
    for role_slug, index, pod in pods:
        role = by_slug.get(role_slug or "")
        if role is None or index is None:
            continue
        grouped.setdefault((role, index), []).append(pod)
    kept: dict[tuple[str, int], list[Obj]] = {}
    for role_slug, index, archive in archives:
        role = by_slug.get(role_slug or "")
        if role is not None and index is not None:
            kept.setdefault((role, index), []).append(archive)
    tasks = []
    for role, spec in job.task_roles.items():
        for i in range(spec.instances):
            task = Task(role=role, index=i)
            task.archived_logs = tuple(
                a["metadata"]["name"] for a in sorted(kept.get((role, i), []), key=_pod_created)
            )
            task.retries = len(task.archived_logs)
            history = sorted(grouped.get((role, i), []), key=_created)
            if history:
                pod = history[-1]
                status = pod.get("status") or {}
                task.pod = pod["metadata"]["name"]
                # A pod its deletion stopped is no failure of the task's: it goes on in a
                # new pod, or stops with the job (below, as a deleted pod still running).
                stopped_by_deletion = killed_by_deletion(pod)
                task.state = TaskState.WAITING if stopped_by_deletion else pod_task_state(pod)
                task.node = (pod.get("spec") or {}).get("nodeName")
                task.ip = status.get("podIP")
                task.ports = pod_ports(pod) or NO_PORTS
                task.started = parse_time(status.get("startTime"))
                task.earlier_pods = tuple(
                    p["metadata"]["name"]
                    for p in history[:-1]
                    if pod_task_state(p) == TaskState.FAILED
                )
                failures = _restarts(pod) + len(task.earlier_pods)
                task.retries = failures + len(task.archived_logs)
                term = None if stopped_by_deletion else _termination(pod)
                if term is not None:
                    task.exit_code = int(term.get("exitCode") or 0)
                    task.exit_reason = term.get("reason")
                    task.completed = parse_time(term.get("finishedAt"))
                if task.state == TaskState.FAILED and failures < spec.task_retry_count:
                    task.state = TaskState.WAITING  # the controller recreates it
                    task.exit_reason = f"retrying after exit code {task.exit_code}"
                if _retries_spent_in_place(pod, spec.task_retry_count):
                    # The kubelet would restart it for ever; the retries are spent.
                    last = _termination(pod, "lastState") or {}
                    task.state = TaskState.FAILED
                    task.exit_code = int(last.get("exitCode") or 1)
                    task.exit_reason = last.get("reason") or "Error"
                deleted = bool((pod.get("metadata") or {}).get("deletionTimestamp"))
                if deleted and killed and task.state != TaskState.SUCCEEDED:
                    task.state = TaskState.STOPPED
                elif deleted and not task.state.terminal:
                    task.state = TaskState.STOPPED if stopped else TaskState.WAITING
                if task.state in (TaskState.RUNNING,) or task.state.terminal:
                    task.gpus = spec.resource_per_instance.gpu
            if stopped and not task.state.terminal and task.pod is None:
                task.state = TaskState.STOPPED
            tasks.append(task)
    return tasks


def job_view(
    job: JobProtocol,
    names: JobNames,
    primary: Obj,
    pods: Sequence[tuple[str | None, int | None, Obj]],
    *,
    waiting_reason: str | None = None,
    archives: Sequence[tuple[str | None, int | None, Obj]] = (),
    flavor: PrimaryReader | None = None,
) -> JobView:
    """``flavor``: reads ``primary``; None: a primary that says nothing of the job."""
    annotations = (primary.get("metadata") or {}).get("annotations") or {}
    end, phase, restarts = (
        (flavor.ended(primary), flavor.phase(primary), flavor.restarts(primary))
        if flavor is not None
        else (None, None, 0)
    )
    stop = bool(annotations.get(ANN_STOP)) or (end is not None and end.stopped)
    ending = end is not None and not end.stopped
    tasks = tasks_from_pods(job, names, pods, stopped=stop, killed=ending, archives=archives)
    active = tuple(
        p["metadata"]["name"]
        for _, _, p in pods
        if pod_task_state(p) in (TaskState.WAITING, TaskState.RUNNING)
    )
    started = [t.started for t in tasks if t.started]
    ended = [t.completed for t in tasks if t.completed]
    view = JobView(
        state=JobState.WAITING,
        sub_state=phase,
        tasks=tasks,
        retries=restarts,
        launched=min(started) if started else None,
        completed=max(ended) if ended else None,
        active_pods=active,
    )
    if stop:
        # The backend marks only a job that has not ended, so a mark means STOPPED.
        view.state = JobState.STOPPING if active else JobState.STOPPED
        view.sub_state = "stopped by user"
        if not active:
            view.completed = parse_time(annotations.get(ANN_STOP)) or view.completed
            for t in view.tasks:
                if not t.state.terminal:
                    t.state = TaskState.STOPPED
        return view
    recorded = annotations.get(ANN_OUTCOME)
    if recorded:
        outcome = json.loads(recorded)
        view.state = JobState(outcome["state"])
        view.sub_state, view.exit_code = outcome.get("reason"), outcome.get("exitCode")
        view.completed = parse_time(outcome.get("time")) or view.completed
        return view
    decision = decide(job, tasks)
    if ending and decision is not None and decision.rule == "all":
        # "every task ended" counts tasks the scheduler killed: its own verdict holds.
        if any(t.state == TaskState.STOPPED for t in tasks):
            decision = None
    if decision is not None:
        view.state, view.sub_state, view.exit_code = (
            decision.state,
            decision.reason,
            decision.exit_code,
        )
        view.decision = decision
        return view
    if end is not None and end.outcome is not None:
        view.state = end.outcome
        view.exit_code = 0 if view.state == JobState.SUCCEEDED else 1
        return view
    if any(t.state == TaskState.RUNNING for t in tasks) or any(t.state.terminal for t in tasks):
        view.state = JobState.RUNNING
        return view
    view.state = JobState.WAITING
    view.waiting_reason = waiting_reason or "waiting for the scheduler to place the job's pods"
    return view


# -- why a job waits ----------------------------------------------------------------------

_QUOTA = re.compile(
    r"exceeded quota: (?P<quota>[^,]+), requested: (?P<req>[^,]+(?:,[^:]+)*?), used: (?P<used>[^,]+(?:,[^:]+)*?), limited: (?P<lim>.+)$"
)
_INSUFFICIENT = re.compile(r"(\d+) Insufficient ([\w./-]*\w)")


def _quantity(listing: str, resource: str) -> int | None:
    m = re.search(rf"{re.escape(resource)}=(\d+)", listing)
    return int(m.group(1)) if m else None


def waiting_reason(
    job: JobProtocol,
    *,
    vc: VcUsage | None,
    events: Sequence[Obj],
    pod_group: Obj | None = None,
    gpu_resource: str = "nvidia.com/gpu",
) -> str:
    """The first reason a user can act on: the queue's GPUs, then the nodes', then what the
    scheduler said, in that order."""
    need = job.total_gpus
    name = job.virtual_cluster
    if vc is not None and vc.state not in ("Open", ""):
        return f"queue {name} is {vc.state.lower()}: it accepts no new jobs"
    newest = sorted(events, key=lambda e: str(e.get("lastTimestamp") or e.get("eventTime") or ""))
    for event in reversed(newest):
        m = _QUOTA.search(str(event.get("message") or ""))
        if m:
            used = _quantity(m["used"], f"requests.{gpu_resource}")
            limit = _quantity(m["lim"], f"requests.{gpu_resource}")
            if used is not None and limit is not None:
                return f"queue {name}: {used} of {limit} GPUs in use, needs {need}"
    if vc is not None and vc.capacity is not None and need and vc.used + need > vc.capacity:
        return f"queue {name}: {vc.used} of {vc.capacity} GPUs in use, needs {need}"
    per_pod = max((s.resource_per_instance.gpu for s in job.task_roles.values()), default=0)
    messages = [str(e.get("message") or "") for e in reversed(newest)]
    if pod_group is not None:
        for cond in (pod_group.get("status") or {}).get("conditions") or []:
            if cond.get("type") == "Unschedulable" and cond.get("status") == "True":
                messages.insert(0, str(cond.get("message") or ""))
    for message in messages:
        for count, resource in _INSUFFICIENT.findall(message):
            if resource == gpu_resource and per_pod:
                return f"no node has {per_pod} free GPUs ({count} nodes short of GPUs)"
            if resource in ("cpu", "memory"):
                return f"no node has enough free {resource} for one instance ({count} nodes short)"
    for event in reversed(newest):
        if event.get("type") == "Warning" and event.get("message"):
            return f"{event.get('reason')}: {event.get('message')}"
    return "waiting for the scheduler to place all instances together"
