"""Starting, watching and stopping the cluster's background processes."""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path

_PR_SET_PDEATHSIG = 1


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def free_ports(names: Sequence[str]) -> dict[str, int]:
    """A distinct free port per name: every socket stays bound until all are chosen, so
    two names never get the same port (one at a time, the kernel may hand one out twice)."""
    sockets: list[socket.socket] = []
    try:
        out = {}
        for name in names:
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sockets.append(sock)
            sock.bind(("127.0.0.1", 0))
            out[name] = int(sock.getsockname()[1])
        return out
    finally:
        for sock in sockets:
            sock.close()


def die_with_parent(sig: int = signal.SIGKILL) -> Callable[[], None]:
    """A preexec_fn: the kernel sends `sig` to the child when its parent dies, so a
    crashed test session leaves nothing behind. SIGKILL by default: a kube-apiserver
    whose etcd died with it hangs in its graceful shutdown."""

    def arm() -> None:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, sig)

    return arm


def start(
    argv: Sequence[str],
    log_path: Path,
    *,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    tie_to_parent: bool = False,
    death_signal: int = signal.SIGKILL,
    preexec: Callable[[], None] | None = None,
) -> subprocess.Popen[bytes]:
    """Start a process in its own session (so `stop` can end its children too);
    `preexec` runs in the child before it executes `argv`."""
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=cwd,
            start_new_session=True,
            preexec_fn=_chain(die_with_parent(death_signal) if tie_to_parent else None, preexec),
        )
    return proc


def _chain(*steps: Callable[[], None] | None) -> Callable[[], None] | None:
    todo = [s for s in steps if s is not None]
    if not todo:
        return None

    def run() -> None:
        for step in todo:
            step()

    return run


def cmdline(pid: int) -> list[str]:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return [part.decode(errors="replace") for part in raw.split(b"\0") if part]


def is_running(pid: int, argv0: str) -> bool:
    """True if `pid` still runs the program we started (not a recycled pid)."""
    args = cmdline(pid)
    if not args or args[0] != argv0:
        return False
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def _reap(pid: int) -> None:
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)


def stop(pid: int, argv0: str, timeout: float = 10.0, first: int = signal.SIGTERM) -> None:
    """`first` (SIGTERM) to the process group, then SIGKILL what is left after `timeout`."""
    if not is_running(pid, argv0):
        _reap(pid)
        return
    for sig, wait in ((first, timeout), (signal.SIGKILL, 5.0)):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, sig)
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            _reap(pid)
            if not is_running(pid, argv0):
                return
            time.sleep(0.1)


def wait_until(
    check: Callable[[], bool],
    timeout: float,
    what: str,
    interval: float = 0.25,
    alive: Callable[[], str | None] | None = None,
) -> None:
    """Poll `check` until true; `alive` returns an error text when a process died."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(Exception):
            if check():
                return
        if alive is not None and (problem := alive()):
            raise RuntimeError(f"{what}: {problem}")
        time.sleep(interval)
    raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what}")


def log_tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""
