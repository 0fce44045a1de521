"""Which process made a short-lived object (a storage helper pod), so that a backend
starting after a killed server removes that server's leftovers and nothing else: not
another user's, and not those of a process of the same user that still runs (the CLI, a
notebook kernel's client, a second server) — deleting those would break their requests.

The owner is this machine's host name, the process id and the process's start time: a
process id the system gave to a new process since is told apart by its start time. In a
container the host name is the pod's, which a restarted JupyterHub server keeps. An
owner on another machine cannot be checked from here and is left alone."""

from __future__ import annotations

import socket
from dataclasses import dataclass

import psutil

from .naming import DOMAIN

ANN_OWNER = f"{DOMAIN}/owner"
# psutil's start times are the boot time plus clock ticks: equal for one process, read twice.
_SAME_START = 1.0


@dataclass(frozen=True)
class ProcessOwner:
    host: str
    pid: int
    started: float

    @classmethod
    def this(cls) -> ProcessOwner:
        process = psutil.Process()
        return cls(socket.gethostname(), process.pid, process.create_time())

    def encode(self) -> str:
        return f"{self.host}/{self.pid}/{self.started:.2f}"

    @classmethod
    def decode(cls, text: str | None) -> ProcessOwner | None:
        """``None`` for a missing or malformed annotation (an object nobody can vouch for)."""
        host, _, rest = (text or "").rpartition("/")
        host, _, pid = host.rpartition("/")
        try:
            return cls(host, int(pid), float(rest)) if host else None
        except ValueError:
            return None

    def gone(self, here: ProcessOwner) -> bool:
        """Whether this owner is known to have ended, judged on machine ``here``."""
        if self.host != here.host:
            return False
        if self.pid == here.pid:
            return abs(self.started - here.started) >= _SAME_START
        try:
            started = psutil.Process(self.pid).create_time()
        except psutil.NoSuchProcess:
            return True
        except psutil.Error:  # there, but not ours to inspect: it runs
            return False
        return abs(started - self.started) >= _SAME_START
