"""One detached process per running job: starts every task instance as its own process
group, restarts failed tasks (``taskRetryCount``) and the whole job (``jobRetryCount``),
applies the completion policy, stops the job on request, and records it all on disk.

Started detached by ``admission.spawn_supervisor`` (or ``python -m … STATE_DIR JOB_ID``); it
does not depend on the process that started it, so jobs outlive a Jupyter server restart.
Its first attempt's tasks are already running when this module is imported
(``bootstrap.claim_and_start``): it takes over their processes.
"""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from types import FrameType

from ...spec.protocol import JobProtocol
from ..completion_policy import Decision, decide
from ..models import JobState, TaskState
from .admission import load_config, requeue, schedule
from .launchplan import LaunchPlan, discard_plan, read_plan, start_task, write_plan
from .processes import alive, group_running, signal_group, start_marker
from .records import JobRecord, TaskRecord, now
from .store import StateStore

POLL_SECONDS = 0.1


@dataclass(frozen=True)
class Preempted:
    """The attempt was stopped to give its GPUs back to the VC that lent them."""

    why: str


Outcome = Decision | Preempted | None  # None: stopped on request


class Supervisor:
    def __init__(self, store: StateStore, job_id: str) -> None:
        self.store = store
        self.job_id = job_id
        self.stop_signalled = False
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.spec: JobProtocol | None = None
        self.plan: LaunchPlan | None = None
        self.grace = load_config(store).stop_grace_seconds

    # -- record updates (always read-modify-write under the lock) ------------------------

    def update(self, change: Callable[[JobRecord], None]) -> JobRecord:
        with self.store.locked():
            rec = self.store.read_job(self.job_id)
            change(rec)
            self.store.write_job(rec)
        return rec

    def event(
        self, reason: str, message: str, *, source: str = "job", warning: bool = False
    ) -> None:
        try:
            self.store.add_event(
                self.job_id, reason, message, source=source, type="Warning" if warning else "Normal"
            )
        except OSError as error:
            if error.errno not in (errno.ENOSPC, errno.EDQUOT):
                raise
            # The state disk is full: the event is lost, the job and its tasks go on.
            print(
                f"jupyter-pai: event {reason} of {self.job_id} not kept: {error}", file=sys.stderr
            )

    # -- main ----------------------------------------------------------------------------

    def run(
        self,
        started: dict[str, subprocess.Popen[bytes]] | None = None,
        early_signals: list[int] | None = None,
    ) -> None:
        """``started``: the first attempt's tasks, already started by the bootstrap;
        ``early_signals``: the stop signals the bootstrap caught before these handlers, read
        once they are installed so that none falls between the two."""
        signal.signal(signal.SIGTERM, self._on_signal)
        signal.signal(signal.SIGINT, self._on_signal)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        self.stop_signalled = self.stop_signalled or bool(early_signals or ())
        if not self._claim():
            for proc in (started or {}).values():  # cannot happen: the bootstrap claimed it
                signal_group(proc.pid, signal.SIGKILL)
            return
        self.spec = JobProtocol.model_validate(self.store.read_spec(self.job_id))
        self.plan = read_plan(self.store, self.job_id) or write_plan(
            self.store, self.store.read_job(self.job_id)
        )
        outcome = self._attempts(started)
        if isinstance(outcome, Preempted):
            self._requeue()
        else:
            self._finish(outcome)

    def _claim(self) -> bool:
        with self.store.locked():
            rec = self.store.read_job(self.job_id)
            if rec.state not in (JobState.RUNNING, JobState.STOPPING):
                return False  # ended, or preempted and requeued before we started
            if (
                rec.supervisor_pid
                and rec.supervisor_pid != os.getpid()
                and alive(rec.supervisor_pid, rec.supervisor_start)
            ):
                return False
            mine = (os.getpid(), start_marker(os.getpid()))
            if (rec.supervisor_pid, rec.supervisor_start) == mine:
                # The bootstrap, this process, claimed it: no write, which a full state
                # disk would refuse, ending the supervisor of a running job.
                return True
            rec.supervisor_pid, rec.supervisor_start = mine
            self.store.write_job(rec)
        return True

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        self.stop_signalled = True

    def _stop_requested(self) -> bool:
        return self.stop_signalled or self.store.stop_marker(self.job_id).exists()

    def _preemption(self) -> Preempted | None:
        try:
            return Preempted(self.store.preempt_marker(self.job_id).read_text())
        except FileNotFoundError:
            return None

    def _attempts(self, started: dict[str, subprocess.Popen[bytes]] | None) -> Outcome:
        """Run attempts until one decides the job (or it is stopped or preempted)."""
        assert self.spec is not None
        while True:
            if started:
                rec = self.store.read_job(self.job_id)
            else:
                if not self._stop_requested() and (preempted := self._preemption()):
                    return preempted
                rec = self.update(self._reset_tasks)
            attempt = rec.retries + rec.preemptions + 1
            self.event("Started", f"attempt {attempt}: starting {len(rec.tasks)} task(s)")
            if started:
                self.procs.update(started)
                for task in rec.tasks:
                    self._started_event(task, started[task.key].pid)
                started = None
            else:
                self._start_all(rec)
            decision = self._watch()
            if not isinstance(decision, Decision):
                return decision
            if decision.state == JobState.FAILED and rec.retries < self.spec.job_retry_count:
                self.event(
                    "JobRetry",
                    f"{decision.reason}; retrying the job ({rec.retries + 1} of {self.spec.job_retry_count})",
                    warning=True,
                )
                self.update(lambda r: setattr(r, "retries", r.retries + 1))
                continue
            return decision

    def _reset_tasks(self, rec: JobRecord) -> None:
        # A job attempt starts fresh tasks, each with its whole taskRetryCount (as
        # FrameworkController recreates the tasks of a retried framework).
        for task in rec.tasks:
            task.retries = 0
            task.state = TaskState.WAITING
            task.exit_code = None
            task.exit_reason = None
            task.pid = None
            task.started_time = task.completed_time = None
        rec.sub_state = None

    # -- tasks ---------------------------------------------------------------------------

    def _start_all(self, rec: JobRecord) -> None:
        started = {task.key: self._launch(task) for task in rec.tasks}
        self._mark_running(started)

    def _launch(self, task: TaskRecord) -> int:
        assert self.plan is not None
        proc = start_task(self.plan, task.key)
        self.procs[task.key] = proc
        self._started_event(task, proc.pid)
        return proc.pid

    def _started_event(self, task: TaskRecord, pid: int) -> None:
        self.event(
            "TaskStarted", f"pid {pid}, GPUs {','.join(task.gpus) or 'none'}", source=task.key
        )

    def _mark_running(self, pids: dict[str, int]) -> None:
        def change(rec: JobRecord) -> None:
            for task in rec.tasks:
                if task.key in pids:
                    task.pid = pids[task.key]
                    task.state = TaskState.RUNNING
                    task.started_time = now()
            rec.sub_state = None

        self.update(change)

    def _watch(self) -> Outcome:
        assert self.spec is not None
        while True:
            if self._stop_requested():
                self._terminate_all("stopped on request")
                return None
            preempted = self._preemption()
            if preempted is not None:
                self._terminate_all(preempted.why)
                return preempted
            exited = [(k, p) for k, p in self.procs.items() if p.poll() is not None]
            if not exited:
                time.sleep(POLL_SECONDS)
                continue
            decision: Decision | None = None
            for key, proc in exited:
                del self.procs[key]
                decision = self._task_exited(key, proc.returncode) or decision
            if decision is not None:
                self._terminate_all(f"job {decision.state.value.lower()}: {decision.reason}")
                return decision

    def _task_exited(self, key: str, returncode: int) -> Decision | None:
        assert self.spec is not None
        code = exit_code(returncode)
        rec = self.store.read_job(self.job_id)
        task = next(t for t in rec.tasks if t.key == key)
        role = self.spec.task_roles[task.role]
        if task.pid:
            signal_group(task.pid, signal.SIGKILL)  # what the task left running in its group
        if code != 0 and task.retries < role.task_retry_count:
            self.event(
                "TaskRetry",
                f"exit code {code}; restarting ({task.retries + 1} of {role.task_retry_count})",
                source=key,
                warning=True,
            )
            self.update(lambda r: _bump_retry(r, key))
            self._mark_running({key: self._launch(task)})
            return None
        state = TaskState.SUCCEEDED if code == 0 else TaskState.FAILED
        self.event("TaskExited", f"exit code {code}", source=key, warning=code != 0)

        def change(r: JobRecord) -> None:
            t = next(t for t in r.tasks if t.key == key)
            t.state = state
            t.exit_code = code
            t.completed_time = now()

        rec = self.update(change)
        return decide(self.spec, rec.tasks)

    def _terminate_all(self, why: str) -> None:
        """SIGTERM every running task's group, SIGKILL what is left after the grace period."""
        running = dict(self.procs)
        for proc in running.values():
            signal_group(proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + self.grace
        # Wait for each task's whole process group, not only its shell: the shell dies of
        # SIGTERM at once while the program it started may still be cleaning up.
        while time.monotonic() < deadline and any(
            p.poll() is None or group_running(p.pid) for p in running.values()
        ):
            time.sleep(POLL_SECONDS)
        for proc in running.values():
            signal_group(proc.pid, signal.SIGKILL)
            proc.wait()
        self.procs.clear()

        def change(rec: JobRecord) -> None:
            for t in rec.tasks:
                if t.key in running:
                    t.state = TaskState.STOPPED
                    t.exit_code = exit_code(running[t.key].returncode)
                    t.exit_reason = why
                    t.completed_time = now()
                elif not t.state.terminal:
                    t.state = TaskState.STOPPED
                    t.exit_reason = why

        if running:
            self.update(change)

    # -- end -----------------------------------------------------------------------------

    def _requeue(self) -> None:
        with self.store.locked():
            rec = self.store.read_job(self.job_id)
            if not rec.stop_requested:
                requeue(self.store, rec)
                schedule(self.store)
                return
        self._finish(None)  # a stop asked for while the tasks were being preempted wins

    def _finish(self, decision: Decision | None) -> None:
        with self.store.locked():
            rec = self.store.read_job(self.job_id)
            if decision is None:
                rec.state = JobState.STOPPED
                rec.sub_state = "stopped on request"
            else:
                rec.state = decision.state
                rec.sub_state = decision.reason
                rec.exit_code = decision.exit_code
            for t in rec.tasks:
                if not t.state.terminal:
                    t.state = TaskState.STOPPED
            rec.completed_time = now()
            rec.supervisor_pid = None
            rec.preemption = None  # it ended before a preemption could requeue it
            self.store.write_job(rec)
            self.store.preempt_marker(self.job_id).unlink(missing_ok=True)
            discard_plan(self.store, self.job_id)
            reason = "Stopped" if decision is None else decision.state.value.capitalize()
            self.event(reason, rec.sub_state or "", warning=rec.state == JobState.FAILED)
            schedule(self.store)


def exit_code(returncode: int) -> int:
    """Like a shell: a process killed by signal N reports 128 + N."""
    return returncode if returncode >= 0 else 128 - returncode


def _bump_retry(rec: JobRecord, key: str) -> None:
    t = next(t for t in rec.tasks if t.key == key)
    t.retries += 1
    t.state = TaskState.WAITING
