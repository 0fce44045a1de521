"""Reading a task's log file without loading it whole: last N lines, a byte range, and
follow (new bytes as they are written, across a restart of the task that rotates the file).

Used by the local backend, and by the Kubernetes backend for storages mapped to local paths.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from .logredaction import LogRedactor, LogSecrets

CHUNK = 64 * 1024
# A follower polls fast when the log has just moved (or not started yet: a cell's first line
# should show at once) and backs off to FOLLOW_POLL_SECONDS while it stays quiet.
FIRST_POLL_SECONDS = 0.02
FOLLOW_POLL_SECONDS = 0.25


def tail_offset(path: Path, lines: int) -> int:
    """Byte offset where the last ``lines`` lines of the file start (reads backwards)."""
    if lines <= 0:
        return path.stat().st_size
    with open(path, "rb") as f:
        f.seek(0, os.SEEK_END)
        end = pos = f.tell()
        if end == 0:
            return 0
        # A final newline ends the last line; it does not start an empty one.
        f.seek(end - 1)
        seen = -1 if f.read(1) == b"\n" else 0
        while pos > 0:
            step = min(CHUNK, pos)
            pos -= step
            f.seek(pos)
            block = f.read(step)
            # rfind, not a loop over bytes: it holds the GIL the loop needs for a fraction.
            at = len(block)
            while (at := block.rfind(b"\n", 0, at)) != -1:
                seen += 1
                if seen == lines:
                    return pos + at + 1
        return 0


@dataclass
class LogStart:
    """Where a read begins, found off the loop in one go (see :func:`begin_reading`): the
    file open at its first byte (None where there is no file yet), its inode, the first
    chunk, what is left of the limit, and the bytes just before the first (to see a secret
    the read's start cuts)."""

    file: BinaryIO | None
    inode: int = 0
    first: bytes = b""
    limit: int | None = None
    before: bytes = b""


def begin_reading(
    path: Path, offset: int = 0, limit: int | None = None, secrets: LogSecrets | None = None
) -> LogStart:
    """Open ``path`` at ``offset`` and read its first chunk (blocking: run it in a thread,
    with whatever else a request checks first, so a log costs the loop one hop)."""
    context = secrets.context if secrets else 0
    opened = _open_at(path, offset, CHUNK if limit is None else min(CHUNK, limit), context)
    if opened is None:
        return LogStart(None)
    f, inode, before, first = opened
    return LogStart(f, inode, first, limit, before)


async def stream_file(
    path: Path,
    *,
    offset: int = 0,
    limit: int | None = None,
    follow: bool = False,
    finished: Callable[[], Awaitable[bool]] | None = None,
    secrets: LogSecrets | None = None,
    begun: LogStart | None = None,
) -> AsyncIterator[bytes]:
    """Yield the file's bytes from ``offset``; with ``follow``, keep yielding until
    ``finished()`` says the writer is done and everything written has been sent.
    ``begun``: the start already read by :func:`begin_reading` with these arguments."""
    pause = FIRST_POLL_SECONDS
    if begun is None:
        begun = await asyncio.to_thread(begin_reading, path, offset, limit, secrets)
    start = begun
    while (f := start.file) is None:
        if not follow or (finished is not None and await finished()):
            return
        await asyncio.sleep(pause)
        pause = min(pause * 2, FOLLOW_POLL_SECONDS)
        start = await asyncio.to_thread(begin_reading, path, offset, limit, secrets)
    pause = FIRST_POLL_SECONDS
    inode, remaining = start.inode, start.limit
    # Only with secrets: holds back what may begin one that is still being written.
    redactor = LogRedactor(secrets, start.before) if secrets else None
    read: bytes | None = start.first
    try:
        while True:
            size = CHUNK if remaining is None else min(CHUNK, remaining)
            data = read if read is not None else await _read(f, size)
            read = None
            if data:
                # A short read of a file nobody follows is its end: no hop to learn it.
                at_end = not follow and len(data) < size
                if remaining is not None:
                    remaining -= len(data)
                if redactor is not None:
                    data = redactor.feed(data)
                if data:
                    yield data
                pause = FIRST_POLL_SECONDS
                if at_end:
                    break
                continue
            if not follow or (remaining is not None and remaining <= 0):
                break
            # At the end: has the task restarted into a new file, or ended?
            if await asyncio.to_thread(_inode, path) not in (None, inode):
                if redactor is not None:
                    if rest := redactor.close():
                        yield rest
                    redactor = LogRedactor(redactor.secrets)
                f.close()
                f = await asyncio.to_thread(open, path, "rb")
                inode = os.fstat(f.fileno()).st_ino
                continue
            if finished is not None and await finished():
                tail = await asyncio.to_thread(f.read)
                if tail and redactor is not None:
                    tail = redactor.feed(tail)
                if tail:
                    yield tail
                break
            await asyncio.sleep(pause)
            pause = min(pause * 2, FOLLOW_POLL_SECONDS)
        if redactor is not None and redactor.holding:
            # What follows the read (a range's end, or bytes written since) decides it.
            after = await _read(f, redactor.secrets.context)
            if rest := redactor.close(after):
                yield rest
    finally:
        f.close()


async def _read(f: BinaryIO, size: int) -> bytes:
    return await asyncio.to_thread(f.read, size) if size > 0 else b""


def _open_at(
    path: Path, offset: int, size: int, context: int = 0
) -> tuple[BinaryIO, int, bytes, bytes] | None:
    """The file open at ``offset``, its inode, the ``context`` bytes before ``offset`` and
    the first ``size`` bytes there; None where there is no file (yet)."""
    try:
        f = open(path, "rb")  # the caller's stream closes it
    except FileNotFoundError:
        return None
    begin = max(0, offset - context)
    f.seek(begin)
    before = f.read(offset - begin) if offset > begin else b""
    f.seek(offset)
    return f, os.fstat(f.fileno()).st_ino, before, f.read(size) if size > 0 else b""


def _inode(path: Path) -> int | None:
    try:
        return os.stat(path).st_ino
    except FileNotFoundError:
        return None
