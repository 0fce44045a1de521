"""The local side of :mod:`.storage`: what an upload sends (a file, or a folder walked),
its progress line, reading a piece, and unpacking a downloaded folder's archive safely."""

from __future__ import annotations

import os
import sys
import tarfile
import time
from dataclasses import dataclass
from typing import IO

from ..errors import BadRequest, FieldError

#: Bytes read from a local file at a time.
BLOCK = 1024 * 1024


def join(*parts: str) -> str:
    """A storage path from parts ('' and slashes at either end ignored)."""
    return "/".join(p.strip("/") for p in parts if p.strip("/"))


class Progress:
    """One text line per file, rewritten in place (``\\r``) at most a few times a second."""

    def __init__(self, label: str, total: int, shown: bool) -> None:
        self.label, self.total, self.shown = label, total, shown
        self.last = 0.0

    def update(self, done: int, final: bool = False) -> None:
        now = time.monotonic()
        if not self.shown or (not final and now - self.last < 0.2):
            return
        self.last = now
        percent = 100 * done // self.total if self.total else 100
        line = f"\r{self.label}: {_size(done)} of {_size(self.total)} ({percent}%)"
        sys.stdout.write(line + ("\n" if final else ""))
        sys.stdout.flush()


def _size(n: int) -> str:
    if n < 1024:
        return f"{n} B"
    amount = float(n)
    for unit in ("KB", "MB", "GB"):
        amount /= 1024
        if amount < 1024 or unit == "GB":
            break
    return f"{amount:.1f} {unit}"


@dataclass
class Plan:
    """What an upload of ``src`` sends: ``files`` (local path, path under the target,
    size) and the ``empty`` folders to make."""

    name: str
    folder: bool
    files: list[tuple[str, str, int]]
    empty: list[str]

    @classmethod
    def of(cls, src: str) -> Plan:
        if not os.path.exists(src):
            raise FileNotFoundError(f"upload: no file or folder {src!r} on this machine")
        name = os.path.basename(os.path.abspath(src))
        if not os.path.isdir(src):
            return cls(name, False, [(src, "", os.path.getsize(src))], [])
        files, empty = [], []
        for folder, dirs, names in os.walk(src):
            dirs.sort()
            rel = os.path.relpath(folder, src).replace(os.sep, "/")
            rel = "" if rel == "." else rel
            if not names and not dirs and rel:
                empty.append(rel)
            for n in sorted(names):
                local = os.path.join(folder, n)
                files.append((local, join(rel, n), os.path.getsize(local)))
        return cls(name, True, files, empty)


def local_target(dst: str, name: str) -> tuple[str, str]:
    """Where a download named ``name`` goes (inside ``dst`` when it is a folder), and the
    folder that holds it (absolute)."""
    target = os.path.abspath(os.path.join(dst, name) if os.path.isdir(dst) else dst)
    return target, os.path.dirname(target)


def read_piece(file: IO[bytes], offset: int, size: int) -> list[bytes]:
    """``size`` bytes from ``offset``, in blocks."""
    file.seek(offset)
    blocks = []
    while size > 0:
        block = file.read(min(BLOCK, size))
        if not block:
            raise OSError(f"{file.name} shrank while it was uploaded")
        blocks.append(block)
        size -= len(block)
    return blocks


def unpack(archive: str, target: str) -> None:
    """Unpacks a ``tar.gz`` into folder ``target``, refusing (before writing anything) any
    member that is not a plain file or folder or whose path leads outside ``target``."""
    root = os.path.abspath(target)
    with tarfile.open(archive, "r:gz") as tar:
        members = tar.getmembers()
        for member in members:
            where = os.path.abspath(os.path.join(root, member.name))
            if not (member.isfile() or member.isdir()):
                raise BadRequest(
                    f"the archive's {member.name!r} is not a file or a folder: refused",
                    [FieldError("archive", member.name)],
                )
            if os.path.isabs(member.name) or os.path.commonpath([root, where]) != root:
                raise BadRequest(
                    f"the archive's {member.name!r} leads outside {target!r}: refused",
                    [FieldError("archive", member.name)],
                )
        os.makedirs(root, exist_ok=True)
        tar.extractall(root, members=members, filter="data")
