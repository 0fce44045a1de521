"""Process facts the local backend relies on: liveness that survives pid reuse, and
signalling a task's whole process group."""

from __future__ import annotations

import contextlib
import os
import signal
from pathlib import Path


def start_marker(pid: int) -> str | None:
    """The kernel's start time of ``pid`` (field 22 of /proc/pid/stat); None if gone.

    Stored next to a pid so that a recycled pid is not mistaken for our process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None if not _exists(pid) else "unknown"
    # The command name (field 2) may contain spaces and parentheses: split after the last ')'.
    fields = stat[stat.rindex(")") + 2 :].split()
    if fields[0] == "Z":  # a zombie has exited; only its parent has not reaped it yet
        return None
    return fields[19]


def alive(pid: int | None, marker: str | None) -> bool:
    if not pid:
        return False
    current = start_marker(pid)
    if current is None:
        return False
    return marker in (None, "unknown") or current in ("unknown", marker)


def _exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def signal_group(pgid: int, sig: signal.Signals) -> bool:
    """Send ``sig`` to a process group; False if it no longer exists."""
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        return False
    except PermissionError:
        return False
    return True


def group_alive(pgid: int) -> bool:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, 0)
        return True
    return False


def group_running(pgid: int) -> bool:
    """True while a live (not zombie) process is left in the group: a task's shell may die
    of SIGTERM at once while the program it started is still saving its work."""
    if not group_alive(pgid):
        return False
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        if fields[2] == str(pgid) and fields[0] not in ("Z", "X"):
            return True
    return False
