"""The scheduling pass: applied under the state lock by whichever process changed something
(a submission, a stop, a job ending), so queued jobs start even when no server runs.

It also heals what a crash left behind: a job whose supervisor died is failed and its
processes killed; a job admitted but never picked up by a supervisor is launched again.
"""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import threading
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import timedelta

from ..models import JobState, TaskState
from ..pythonchild import python_command
from .launchplan import discard_plan, write_plan
from .processes import alive, signal_group
from .records import JobRecord, now
from .scheduler import Demand, VcPolicy, plan
from .store import StateStore, rotate_log, write_atomic

RELAUNCH_AFTER = timedelta(seconds=30)


@dataclass
class SharedConfig:
    """Settings every process using the state directory must agree on (config.json)."""

    slots: list[str] = field(default_factory=list)
    capacities: dict[str, int] = field(default_factory=lambda: {"default": 0})  # guaranteed
    stop_grace_seconds: float = 10.0
    borrowers: list[str] = field(default_factory=list)  # VCs that may borrow idle GPUs
    non_lenders: list[str] = field(default_factory=list)  # VCs that keep their idle GPUs

    @classmethod
    def of(
        cls, slots: list[str], policies: dict[str, VcPolicy], stop_grace_seconds: float
    ) -> SharedConfig:
        return cls(
            slots=slots,
            capacities={n: p.guaranteed for n, p in policies.items()},
            stop_grace_seconds=stop_grace_seconds,
            borrowers=[n for n, p in policies.items() if p.borrow],
            non_lenders=[n for n, p in policies.items() if not p.lend],
        )

    def policies(self) -> dict[str, VcPolicy]:
        return {
            name: VcPolicy(n, name in self.borrowers, name not in self.non_lenders)
            for name, n in self.capacities.items()
        }


def load_config(store: StateStore) -> SharedConfig:
    path = store.root / "config.json"
    if not path.exists():
        return SharedConfig()
    return SharedConfig(**json.loads(path.read_bytes()))


def save_config(store: StateStore, config: SharedConfig) -> None:
    write_atomic(store.root / "config.json", json.dumps(asdict(config), indent=1), mode=0o644)


Spawner = Callable[[StateStore, str], None]


# Fork before importing anything heavy, so the spawner waits only for Python to start.
_DAEMON = (
    "import os, sys\n"
    "if os.fork() > 0:\n"
    "    os._exit(0)\n"
    "from jupyter_pai.backends.local.bootstrap import main\n"
    "main(sys.argv[1:])\n"
)


def spawn_supervisor(store: StateStore, job_id: str) -> None:
    """Start the job's supervisor detached from this process (it outlives the server)."""
    log = open(store.job_dir(job_id) / "supervisor.log", "ab")
    try:
        proc = subprocess.Popen(
            python_command(_DAEMON, str(store.root), job_id),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,
            close_fds=True,
        )
    finally:
        log.close()
    # The first child exits as soon as it has forked the supervisor: reap it on the side,
    # so this pass (which holds the state lock) does not wait for a Python to start.
    threading.Thread(target=proc.wait, name="jupyter-pai-reap", daemon=True).start()


def schedule(store: StateStore, spawn: Spawner = spawn_supervisor) -> None:
    """One pass; the caller holds ``store.locked()``."""
    config = load_config(store)
    records: list[JobRecord] = []
    for job_id in store.active_ids():
        try:
            records.append(store.read_job(job_id))
        except FileNotFoundError:
            continue
    for rec in records:
        if rec.state in (JobState.RUNNING, JobState.STOPPING):
            _heal(store, rec, spawn)
    active = [r for r in records if not r.state.terminal]
    demands = [Demand(r, {t.key: t.gpu_request for t in r.tasks}) for r in active]
    decided = plan(demands, config.slots, config.policies())
    by_id = {r.id: r for r in active}
    for job_id, reason in decided.waiting.items():
        rec = by_id[job_id]
        if rec.waiting_reason != reason:
            rec.waiting_reason = reason
            store.write_job(rec)
            store.add_event(job_id, "Waiting", reason)
    for job_id, why in decided.preempt.items():
        preempt(store, by_id[job_id], why)
    held_ports = {p for r in active for p in r.allocated_ports}
    for job_id, grant in decided.start.items():
        rec = by_id[job_id]
        ports = PortPicker(held_ports)
        for task in rec.tasks:
            task.gpus = grant.get(task.key, [])
            task.ports = {label: ports.take(n) for label, n in task.port_request.items()}
        rec.master_port = ports.take(1)[0]
        ports.release()
        rec.state = JobState.RUNNING
        rec.sub_state = "launching"
        rec.waiting_reason = None
        rec.preemption = None
        rec.launched_time = now()
        store.write_job(rec)
        gpus = ",".join(g for t in rec.tasks for g in t.gpus) or "none"
        store.add_event(
            job_id, "Scheduled", f"all {len(rec.tasks)} task(s) admitted together; GPUs {gpus}"
        )
        # The supervisor starts (it waits for this pass's lock) while its plan is written.
        spawn(store, job_id)
        write_plan(store, rec)
    store.write_active([r.id for r in active])


def preempt(store: StateStore, rec: JobRecord, why: str) -> None:
    """Ask the job's supervisor to stop its tasks (SIGTERM, grace, SIGKILL, as a stop does)
    and requeue it; until then the job holds its GPUs, and the plan counts them as coming
    back."""
    rec.preemption = why
    rec.sub_state = "preempting"
    store.write_job(rec)
    write_atomic(store.preempt_marker(rec.id), why)
    store.add_event(rec.id, "Preempting", f"{why}; stopping its tasks", type="Warning")


def requeue(store: StateStore, rec: JobRecord) -> None:
    """A preempted job goes back to WAITING, keeping its place in its VC's queue. Not a
    failure: jobRetryCount is untouched. Each task's log becomes an earlier attempt's."""
    for task in rec.tasks:
        rotate_log(store.log_path(rec.id, task.role, task.index))
        task.state = TaskState.WAITING
        task.gpus, task.ports, task.pid = [], {}, None
        task.exit_code = task.exit_reason = None
        task.retries = 0
        task.started_time = task.completed_time = None
    rec.state = JobState.WAITING
    rec.sub_state = None
    rec.waiting_reason = rec.preemption
    rec.launched_time = None
    rec.master_port = None
    rec.supervisor_pid = None
    rec.supervisor_start = None
    rec.preemptions += 1
    store.write_job(rec)
    store.preempt_marker(rec.id).unlink(missing_ok=True)
    discard_plan(store, rec.id)
    store.add_event(
        rec.id,
        "Preempted",
        f"{rec.preemption}; back to WAITING, it runs again when GPUs free up "
        "(the stopped attempt's logs stay readable as an earlier attempt)",
        type="Warning",
    )


def _heal(store: StateStore, rec: JobRecord, spawn: Spawner) -> None:
    if rec.preemption is not None and not rec.stop_requested:
        if rec.supervisor_pid is None or not alive(rec.supervisor_pid, rec.supervisor_start):
            # Nobody will finish the preemption: do it here (a supervisor that starts later
            # finds the job WAITING and leaves it alone).
            for task in rec.tasks:
                if task.pid and task.state == TaskState.RUNNING:
                    signal_group(task.pid, signal.SIGKILL)
            requeue(store, rec)
        return
    if rec.supervisor_pid is None:
        if rec.launched_time and now() - rec.launched_time > RELAUNCH_AFTER:
            store.add_event(
                rec.id,
                "Relaunch",
                "the job's supervisor never started; starting it again",
                type="Warning",
            )
            rec.launched_time = now()
            store.write_job(rec)
            spawn(store, rec.id)
        return
    if alive(rec.supervisor_pid, rec.supervisor_start):
        return
    for task in rec.tasks:
        if task.pid and task.state == TaskState.RUNNING:
            signal_group(task.pid, signal.SIGKILL)
        if not task.state.terminal:
            task.state = TaskState.STOPPED if rec.stop_requested else TaskState.FAILED
            task.exit_reason = "the job's supervisor process ended unexpectedly"
            task.completed_time = now()
    rec.state = JobState.STOPPED if rec.stop_requested else JobState.FAILED
    rec.sub_state = "supervisor lost"
    rec.completed_time = now()
    rec.supervisor_pid = None
    store.write_job(rec)
    discard_plan(store, rec.id)
    store.add_event(
        rec.id,
        "SupervisorLost",
        "the job's supervisor process ended unexpectedly; its tasks were killed",
        type="Warning",
    )


class PortPicker:
    """Free TCP ports not held by another active job; probe sockets stay bound until
    :meth:`release` so one pass never hands out the same port twice."""

    def __init__(self, held: set[int]) -> None:
        self.held = held
        self._sockets: list[socket.socket] = []

    def take(self, count: int) -> list[int]:
        ports: list[int] = []
        while len(ports) < count:
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            self._sockets.append(s)
            port = int(s.getsockname()[1])
            if port not in self.held:
                self.held.add(port)
                ports.append(port)
        return ports

    def release(self) -> None:
        for s in self._sockets:
            s.close()
        self._sockets.clear()


def requeue_orphans(store: StateStore) -> None:
    """Jobs written whole but missing from active.json (a crash between the two writes)."""
    active = store.active_ids()
    missing = []
    for job_id in store.job_ids():
        if job_id in active:
            continue
        try:
            rec = store.read_job(job_id)
        except (FileNotFoundError, ValueError):
            continue
        if not rec.state.terminal:
            missing.append(rec)
    if missing:
        known = [store.read_job(i) for i in active if store.exists(i)]
        ordered = sorted(known + missing, key=lambda r: r.submission_time)
        store.write_active([r.id for r in ordered])
