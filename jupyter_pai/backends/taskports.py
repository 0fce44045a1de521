"""Which task port a request may reach: the server proxies a running task's declared
ports (TensorBoard, a web UI) into JupyterLab, and only those of the user's own jobs.

Pure: the backend finds the job and says where the port is reachable from this machine
(the task's own port locally, a port-forward's listener on Kubernetes)."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import BadRequest, Conflict, FieldError, Forbidden, NotFound, PAIError
from .models import JobDetail, TaskState, TaskStatus


class PortTaken(PAIError):
    """Something other than the task listens on its port: nothing is sent there."""

    status = 502


@dataclass(frozen=True)
class PortAddress:
    """Where this server connects to reach a task's port: ``host:port``, or a Unix socket
    of this machine (a port-forward only its owner may connect to), in which case
    ``host:port`` is how the app would name itself (its ``Host``)."""

    host: str
    port: int
    socket: str | None = None


def parse_task(text: str) -> tuple[str, int]:
    """``worker-0`` → (``worker``, 0): a task as the panel names it, role then index."""
    role, sep, index = text.rpartition("-")
    if not sep or not role or not index.isdigit():
        raise BadRequest(
            f"task must be <role>-<index>, e.g. worker-0; got {text!r}",
            [FieldError("task", f"got {text!r}")],
        )
    return role, int(index)


def parse_port(text: str) -> int:
    if not text.isdigit() or not 0 < int(text) < 65536:
        raise BadRequest(
            f"port must be a port number the task holds; got {text!r}",
            [FieldError("port", f"got {text!r}")],
        )
    return int(text)


def port_label(task: TaskStatus, port: int) -> str | None:
    return next((label for label, ps in task.ports.items() if port in ps), None)


def resolve(job: JobDetail, user: str, task: str, port: int) -> TaskStatus:
    """The running task of ``job`` that declared ``port``, if ``user`` may reach it;
    else the typed error saying why (403 not theirs, 404 no such task or port, 409 the
    task is not running)."""
    if job.user != user:
        raise Forbidden(f"job {job.id} belongs to {job.user}; only they may open its ports")
    role, index = parse_task(task)
    status = next((t for t in job.tasks if t.role == role and t.index == index), None)
    if status is None:
        names = ", ".join(f"{t.role}-{t.index}" for t in job.tasks)
        raise NotFound(
            f"job {job.id} has no task {task} (its tasks: {names})",
            [FieldError("task", f"got {task!r}")],
        )
    # Before the port: a pod that has gone no longer says which ports it held.
    if status.state != TaskState.RUNNING:
        raise Conflict(
            f"task {task} of job {job.id} is {status.state.value}: its ports are open only while it runs"
        )
    if port_label(status, port) is None:
        held = ", ".join(f"{label} {','.join(map(str, ps))}" for label, ps in status.ports.items())
        raise NotFound(
            f"task {task} of job {job.id} declares no port {port} (it holds: {held or 'none'})",
            [FieldError("port", f"got {port}")],
        )
    return status
