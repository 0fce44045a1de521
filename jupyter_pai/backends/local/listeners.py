"""Who listens on a task's port, before the server sends a user's request there.

A task's ports are picked when it is admitted, and free until its app binds them: any
process of this machine, another user's among them, may take one first. The proxy then
sends requests only where the listener is a process of the task itself (its session:
every task instance is started as a session of its own), read from Linux's ``/proc``: the
listening sockets of ``/proc/net/tcp{,6}`` and the sockets each of the task's processes
holds. Where there is no ``/proc`` nothing is checked."""

from __future__ import annotations

import asyncio
import os
import pwd
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ..taskports import PortTaken

LISTEN = "0A"
#: Local addresses a connection to 127.0.0.1 reaches: loopback and the wildcard (IPv4,
#: and IPv6's own, which takes IPv4 too unless the socket is v6-only).
_REACHED = frozenset(
    {
        "0100007F",
        "00000000",
        "00000000000000000000000000000000",
        "0000000000000000FFFF00000100007F",
    }
)


@dataclass(frozen=True)
class Listener:
    inode: int
    uid: int


def listeners(port: int, tables: Iterable[str] | None = None) -> list[Listener] | None:
    """Sockets listening on ``port`` where a connection to 127.0.0.1 arrives; None where
    this machine has no ``/proc/net/tcp``. ``tables``: the tables' text (tests)."""
    if tables is None:
        texts = []
        for name in ("/proc/net/tcp", "/proc/net/tcp6"):
            try:
                texts.append(Path(name).read_text())
            except OSError:
                continue
        if not texts:
            return None
        tables = texts
    found = []
    for text in tables:
        for line in text.splitlines()[1:]:
            fields = line.split()
            if len(fields) < 10 or fields[3] != LISTEN:
                continue
            address, _, hex_port = fields[1].partition(":")
            if int(hex_port, 16) == port and address in _REACHED:
                found.append(Listener(inode=int(fields[9]), uid=int(fields[7])))
    return found


def session_sockets(session: int, proc: Path = Path("/proc")) -> set[int]:
    """Inodes of the sockets the processes of ``session`` hold."""
    held: set[int] = set()
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            # After the command's closing parenthesis: state, ppid, pgrp, session, …
            if int(stat[stat.rindex(")") + 2 :].split()[3]) != session:
                continue
            for fd in (entry / "fd").iterdir():
                target = os.readlink(fd)
                if target.startswith("socket:["):
                    held.add(int(target[8:-1]))
        except (OSError, ValueError, IndexError):
            continue  # gone meanwhile, or not ours to read
    return held


def strangers(port: int, session: int) -> list[Listener]:
    """Listeners on ``port`` that no process of the task's ``session`` holds (blocking:
    run it in a thread)."""
    found = listeners(port)
    if not found:
        return []
    held = session_sockets(session)
    return [listener for listener in found if listener.inode not in held]


class PortOwners:
    """:func:`strangers` for the proxy, off the event loop; a port found to be the task's
    stays trusted for a moment (a page loads many resources at once)."""

    TRUST_SECONDS = 2.0

    def __init__(self) -> None:
        self._trusted: dict[tuple[int, int], float] = {}

    async def check(self, port: int, session: int, task: str) -> None:
        key = (port, session)
        if time.monotonic() - self._trusted.get(key, -self.TRUST_SECONDS) < self.TRUST_SECONDS:
            return
        foreign = await asyncio.to_thread(strangers, port, session)
        if foreign:
            owner = foreign[0].uid
            try:
                name = pwd.getpwuid(owner).pw_name
            except KeyError:
                name = f"uid {owner}"
            raise PortTaken(
                f"port {port} of this machine is held by a process of {name} that is not "
                f"{task}: the task could not listen on it, and nothing is sent to another "
                "program; stop the job and submit it again for another port"
            )
        self._trusted[key] = time.monotonic()
