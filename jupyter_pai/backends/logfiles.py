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

from ..spec.render import HIDDEN, redact_bytes

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
    chunk, what is left of the limit, and the placeholders for secrets cut by the range."""

    file: BinaryIO | None
    inode: int = 0
    first: bytes = b""
    limit: int | None = None
    prefix: bytes = b""
    suffix: bytes = b""


def begin_reading(
    path: Path, offset: int = 0, limit: int | None = None, secrets: list[str] | None = None
) -> LogStart:
    """Open ``path`` at ``offset`` and read its first chunk (blocking: run it in a thread,
    with whatever else a request checks first, so a log costs the loop one hop)."""
    prefix = suffix = b""
    if secrets and (offset > 0 or limit is not None):
        # A byte range may cut a secret in two: hide the part of it on our side of each cut.
        try:
            offset, limit, prefix, suffix = _uncut_secrets(path, offset, limit, secrets)
        except FileNotFoundError:
            return LogStart(None)
    opened = _open_at(path, offset, CHUNK if limit is None else min(CHUNK, limit))
    if opened is None:
        return LogStart(None)
    f, inode, first = opened
    return LogStart(f, inode, first, limit, prefix, suffix)


async def stream_file(
    path: Path,
    *,
    offset: int = 0,
    limit: int | None = None,
    follow: bool = False,
    finished: Callable[[], Awaitable[bool]] | None = None,
    secrets: list[str] | None = None,
    begun: LogStart | None = None,
) -> AsyncIterator[bytes]:
    """Yield the file's bytes from ``offset``; with ``follow``, keep yielding until
    ``finished()`` says the writer is done and everything written has been sent.
    ``begun``: the start already read by :func:`begin_reading` with these arguments."""
    pending = b""  # an incomplete last line, held back only when secrets must be redacted
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
    inode, suffix, remaining = start.inode, start.suffix, start.limit
    read: bytes | None = start.first
    try:
        if start.prefix:
            yield start.prefix
        while True:
            size = CHUNK if remaining is None else min(CHUNK, remaining)
            data = read if read is not None else await _read(f, size)
            read = None
            if data:
                # A short read of a file nobody follows is its end: no hop to learn it.
                at_end = not follow and len(data) < size
                if remaining is not None:
                    remaining -= len(data)
                if secrets:
                    data = pending + data
                    cut = data.rfind(b"\n") + 1
                    data, pending = data[:cut], data[cut:]
                    data = redact_bytes(data, secrets)
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
                f.close()
                f = await asyncio.to_thread(open, path, "rb")
                inode = os.fstat(f.fileno()).st_ino
                continue
            if finished is not None and await finished():
                tail = await asyncio.to_thread(f.read)
                if tail:
                    pending += tail
                break
            await asyncio.sleep(pause)
            pause = min(pause * 2, FOLLOW_POLL_SECONDS)
        if pending:
            yield redact_bytes(pending, secrets or [])
        if suffix:
            yield suffix
    finally:
        f.close()


def _uncut_secrets(
    path: Path, offset: int, limit: int | None, secrets: list[str]
) -> tuple[int, int | None, bytes, bytes]:
    """Move the ends of the byte range ``[offset, offset + limit)`` off any secret that
    crosses them. Returns the new offset and limit, and the placeholder to send before and
    after the range for each end that moved; what lies inside is redacted as usual."""
    values = [v.encode("utf-8", errors="surrogateescape") for v in secrets if v]
    if not values:
        return offset, limit, b"", b""
    keep = max(len(v) for v in values) - 1
    size = path.stat().st_size
    end = size if limit is None else min(size, offset + limit)
    begin = max(0, offset - keep)
    with open(path, "rb") as f:
        f.seek(begin)
        window = f.read(max(0, min(size, end + keep) - begin))
    start, stop = offset, end
    for value in values:
        at = window.find(value)
        while at != -1:
            first, last = begin + at, begin + at + len(value)
            if first < offset < last:
                start = max(start, last)
            if first < end < last:
                stop = min(stop, first)
            at = window.find(value, at + 1)
    prefix = HIDDEN.encode() if start > offset else b""
    suffix = HIDDEN.encode() if stop < end else b""
    if start >= stop:  # the whole range lies inside a secret
        return start, 0, prefix or suffix, b""
    if limit is None and stop == end:
        return start, None, prefix, suffix
    return start, stop - start, prefix, suffix


async def _read(f: BinaryIO, size: int) -> bytes:
    return await asyncio.to_thread(f.read, size) if size > 0 else b""


def _open_at(path: Path, offset: int, size: int) -> tuple[BinaryIO, int, bytes] | None:
    """The file open at ``offset``, its inode and its first ``size`` bytes there; None
    where there is no file (yet)."""
    try:
        f = open(path, "rb")  # the caller's stream closes it
    except FileNotFoundError:
        return None
    f.seek(offset)
    return f, os.fstat(f.fileno()).st_ino, f.read(size) if size > 0 else b""


def _inode(path: Path) -> int | None:
    try:
        return os.stat(path).st_ino
    except FileNotFoundError:
        return None
