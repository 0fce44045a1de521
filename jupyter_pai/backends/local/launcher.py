"""A warm fork server for job supervisors.

Starting a supervisor as a fresh Python costs tens of milliseconds before its first task
runs, most of a local job's start. A long-lived server starts one launcher process with the
supervisor's modules already imported; each job's supervisor is a fork of it, detached in a
session of its own, so it outlives the launcher and the server like one started afresh.

The launcher reads ``STATE_DIR<TAB>JOB_ID`` lines on its stdin and exits when that closes
(the server stopped or died). Whenever it cannot take a request, the caller starts the
supervisor the old way: a job never waits on the launcher.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading

from ..pythonchild import python_command
from .admission import spawn_supervisor
from .store import StateStore

# The launcher's own program: import what a supervisor needs, then fork one per line.
_SERVE = "from jupyter_pai.backends.local.launcher import serve\nserve()\n"


def serve() -> None:
    """The launcher's loop (its own process)."""
    from . import bootstrap, supervisor  # noqa: F401  (warm: each fork has them imported)

    # Reap the forks at once; each one puts the default back before it starts tasks.
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    print("ready", flush=True)
    for line in sys.stdin.buffer:
        root, _, job_id = line.decode().rstrip("\n").partition("\t")
        if root and job_id and os.fork() == 0:
            _become_supervisor(root, job_id)


def _become_supervisor(root: str, job_id: str) -> None:
    """In the fork: detach as ``spawn_supervisor`` would, then run the job; never return."""
    code = 1
    try:
        os.setsid()
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        log = os.open(
            os.path.join(StateStore(root).job_dir(job_id), "supervisor.log"),
            os.O_WRONLY | os.O_APPEND | os.O_CREAT,
            0o600,
        )
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.closerange(3, os.sysconf("SC_OPEN_MAX"))
        sys.stdin = open(0, closefd=False)  # the process's own descriptors
        sys.stdout = open(1, "w", closefd=False)
        sys.stderr = open(2, "w", closefd=False)
        from .bootstrap import main

        main([root, job_id])
        code = 0
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else 1
    except BaseException:
        import traceback

        traceback.print_exc()
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


class Launcher:
    """A process's handle on its launcher; ``spawn`` is a ``schedule`` spawner. One per
    process (:func:`shared`), started by its first user and stopped after its last."""

    def __init__(self) -> None:
        self._proc: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()
        self._ready = threading.Event()
        self._users = 0

    def start(self) -> None:
        with self._lock:
            self._users += 1
            if self._proc is None or self._proc.poll() is not None:
                self._launch()

    def _launch(self) -> None:
        self._ready.clear()
        self._proc = subprocess.Popen(
            python_command(_SERVE),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            start_new_session=True,
            close_fds=True,
        )
        # Until its imports are done, supervisors start the old way rather than wait.
        threading.Thread(
            target=self._await_ready, args=(self._proc,), name="jupyter-pai-launcher", daemon=True
        ).start()

    def _await_ready(self, proc: subprocess.Popen[bytes]) -> None:
        if proc.stdout is not None and proc.stdout.readline() == b"ready\n":
            self._ready.set()

    def spawn(self, store: StateStore, job_id: str) -> None:
        with self._lock:
            proc = self._proc
            if proc is not None and self._ready.is_set() and proc.stdin is not None:
                try:
                    proc.stdin.write(f"{store.root}\t{job_id}\n".encode())
                    proc.stdin.flush()
                    return
                except OSError:  # it died: this job starts the old way, the next forks again
                    pass
            if self._users and (proc is None or proc.poll() is not None):
                self._launch()
        spawn_supervisor(store, job_id)

    def close(self) -> None:
        with self._lock:
            self._users = max(0, self._users - 1)
            if self._users:
                return
            proc, self._proc = self._proc, None
            self._ready.clear()
        if proc is None:
            return
        with contextlib.suppress(OSError):
            if proc.stdin is not None:
                proc.stdin.close()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


_SHARED = Launcher()


def shared() -> Launcher:
    """This process's launcher (the server's backend and its kernels' backend share it)."""
    return _SHARED
