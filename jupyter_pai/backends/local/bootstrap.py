"""A job supervisor's first moments: claim the job and start its tasks from the launch plan
with the standard library alone, then hand over to :class:`~.supervisor.Supervisor`, whose
imports (pydantic, the spec's models) would otherwise delay every task's start.

The entry point of the detached supervisor process (``admission.spawn_supervisor``).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
from datetime import datetime, timezone
from types import FrameType

from .launchplan import read_plan, start_task
from .processes import alive, start_marker
from .store import StateStore, write_atomic

# JobState / TaskState values, spelled out: the models module imports pydantic.
ACTIVE = ("RUNNING", "STOPPING")


# Signals that came before the Supervisor set its handlers (it reads them then).
early_signals: list[int] = []


def _remember(signum: int, frame: FrameType | None) -> None:
    early_signals.append(signum)


class NotClaimed(Exception):
    """The job is not this process's to run (it ended, was requeued, or has a supervisor)."""


def claim_and_start(store: StateStore, job_id: str) -> dict[str, subprocess.Popen[bytes]] | None:
    """Become the job's supervisor and start its first attempt's tasks, recording their pids
    in the same locked update. None: claimed but nothing started (a stop or preemption is
    already asked for, or there is no plan) — the Supervisor decides then, as it always did.
    """
    path = store.job_dir(job_id) / "job.json"
    with store.locked():
        rec = json.loads(path.read_bytes())
        pid = rec.get("supervisor_pid")
        if rec["state"] not in ACTIVE or (
            pid and pid != os.getpid() and alive(pid, rec.get("supervisor_start"))
        ):
            raise NotClaimed(job_id)
        rec["supervisor_pid"] = os.getpid()
        rec["supervisor_start"] = start_marker(os.getpid())
        plan = read_plan(store, job_id)
        marked = store.stop_marker(job_id).exists() or store.preempt_marker(job_id).exists()
        procs: dict[str, subprocess.Popen[bytes]] = {}
        if plan is not None and not marked:
            started = datetime.now(timezone.utc).isoformat()
            for task in rec["tasks"]:
                key = f"{task['role']}-{task['index']}"
                procs[key] = start_task(plan, key)
                # A fresh attempt, as Supervisor._reset_tasks leaves it, now running.
                task.update(
                    pid=procs[key].pid,
                    state="RUNNING",
                    started_time=started,
                    retries=0,
                    exit_code=None,
                    exit_reason=None,
                    completed_time=None,
                )
            rec["sub_state"] = None
        write_atomic(path, json.dumps(rec, indent=1))
        store.changed(job_id)
    return procs or None


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="jupyter_pai.backends.local.supervisor")
    parser.add_argument("state_dir")
    parser.add_argument("job_id")
    args = parser.parse_args(argv)
    store = StateStore(args.state_dir)
    signal.signal(signal.SIGTERM, _remember)
    signal.signal(signal.SIGINT, _remember)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        try:
            started = claim_and_start(store, args.job_id)
        except NotClaimed:
            return
        from .supervisor import Supervisor  # the heavy part, once the tasks run

        Supervisor(store, args.job_id).run(started, early_signals)
    except Exception:
        import traceback

        traceback.print_exc()
        sys.stderr.flush()
        raise
