"""What each task of an admitted job is started with: its script, environment and working
directory, fixed when the job is admitted (GPUs and ports are known then) and kept in
``jobs/<id>/launch.json`` (0600: the environment is the user's).

The process that admits a job has the spec's models loaded already; its supervisor reads
the plan with the standard library alone, so the job's tasks start before the supervisor
imports pydantic (about 0.15 s of a one-task job's start otherwise).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

from .store import StateStore, rotate_log, write_atomic

if TYPE_CHECKING:
    from .records import JobRecord

LOCAL_HOST = "127.0.0.1"
PLAN_FILE = "launch.json"


class TaskLaunch(TypedDict):
    script: str
    log: str
    env: dict[str, str]


class LaunchPlan(TypedDict):
    cwd: str
    tasks: dict[str, TaskLaunch]


def plan_path(store: StateStore, job_id: str) -> Path:
    return store.job_dir(job_id) / PLAN_FILE


def write_plan(store: StateStore, rec: JobRecord) -> LaunchPlan:
    """Write every task's script and the plan, for the GPUs and ports ``rec`` was given."""
    # Imported here, not at the top: a supervisor imports this module to read plans.
    from ...runtime import task_script
    from ...runtime.plugins import LOCAL
    from ...spec.protocol import JobProtocol
    from ..envcontract import Placement, job_environment, task_environment

    spec = JobProtocol.model_validate(store.read_spec(rec.id))
    placements = {(t.role, t.index): Placement(host=LOCAL_HOST, ports=t.ports) for t in rec.tasks}
    shared = job_environment(
        spec,
        job_id=rec.id,
        user=rec.user,
        virtual_cluster=rec.virtual_cluster,
        placements=placements,
        master_port=rec.master_port or 0,
    )
    inherited = user_environment()
    run_dir = store.job_dir(rec.id) / "run"
    run_dir.mkdir(exist_ok=True, mode=0o700)
    tasks: dict[str, TaskLaunch] = {}
    for task in rec.tasks:
        script = run_dir / f"{task.key}.sh"
        script.write_text(task_script(spec, task.role, backend=LOCAL))
        script.chmod(0o700)
        env = {
            **inherited,
            **task_environment(
                spec, shared, role=task.role, index=task.index, placements=placements
            ),
        }
        # Every task sees only its own GPUs; an empty value hides all GPUs from CPU-only tasks.
        env["CUDA_VISIBLE_DEVICES"] = ",".join(task.gpus)
        # The ids are NVML's (PCI bus order); CUDA's default order is fastest first, which
        # on a machine with mixed GPUs would give the task another GPU than it was given.
        env["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"
        log = store.log_path(rec.id, task.role, task.index)
        tasks[task.key] = TaskLaunch(script=str(script), log=str(log), env=env)
    cwd = rec.working_dir if Path(rec.working_dir).is_dir() else str(store.job_dir(rec.id))
    plan = LaunchPlan(cwd=cwd, tasks=tasks)
    write_atomic(plan_path(store, rec.id), json.dumps(plan), mode=0o600)
    return plan


def read_plan(store: StateStore, job_id: str) -> LaunchPlan | None:
    try:
        plan: LaunchPlan = json.loads(plan_path(store, job_id).read_bytes())
    except FileNotFoundError:
        return None  # admitted by a version that wrote no plan: the supervisor writes one
    return plan


def discard_plan(store: StateStore, job_id: str) -> None:
    """The attempt is over (ended, or requeued to be admitted afresh): the environment's
    copy on disk goes with it."""
    plan_path(store, job_id).unlink(missing_ok=True)


def start_task(plan: LaunchPlan, key: str) -> subprocess.Popen[bytes]:
    """Start one task instance as its own process group, its output appended to its log."""
    task = plan["tasks"][key]
    log_path = Path(task["log"])
    rotate_log(log_path)
    with open(log_path, "ab") as log:
        return subprocess.Popen(
            [shutil.which("bash") or "/bin/sh", task["script"]],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=task["env"],
            cwd=plan["cwd"],
            start_new_session=True,
            close_fds=True,
        )


def user_environment() -> dict[str, str]:
    """The environment tasks inherit: ours, minus what only the Jupyter server should hold."""
    env = dict(os.environ)
    # `python` in a task is the Python the server or CLI runs on (the user's environment),
    # even when that was started by full path without activating it.
    bindir = os.path.dirname(sys.executable)
    env["PATH"] = os.pathsep.join(
        [bindir, *(p for p in env.get("PATH", "").split(os.pathsep) if p and p != bindir)]
    )
    for key in list(env):
        if key in ("JUPYTER_TOKEN", "JPY_API_TOKEN", "JUPYTERHUB_API_TOKEN") or key.startswith(
            "JPY_"
        ):
            env.pop(key)
    return env
