"""Reading a task's log file without loading it whole: last N lines, a byte range, and
follow (new bytes as they are written, across a restart of the task that rotates the file).

Used by the local backend, and by the Kubernetes backend for storages mapped to local paths.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

from ..spec.render import redact

CHUNK = 64 * 1024
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
            for i in range(len(block) - 1, -1, -1):
                if block[i] == 0x0A:
                    seen += 1
                    if seen == lines:
                        return pos + i + 1
        return 0


async def stream_file(
    path: Path,
    *,
    offset: int = 0,
    limit: int | None = None,
    follow: bool = False,
    finished: Callable[[], Awaitable[bool]] | None = None,
    secrets: list[str] | None = None,
) -> AsyncIterator[bytes]:
    """Yield the file's bytes from ``offset``; with ``follow``, keep yielding until
    ``finished()`` says the writer is done and everything written has been sent."""
    remaining = limit
    pending = b""  # an incomplete last line, held back only when secrets must be redacted
    while follow and not await asyncio.to_thread(path.exists):
        if finished is not None and await finished():
            return
        await asyncio.sleep(FOLLOW_POLL_SECONDS)
    if not await asyncio.to_thread(path.exists):
        return
    f = await asyncio.to_thread(open, path, "rb")
    try:
        inode = os.fstat(f.fileno()).st_ino
        await asyncio.to_thread(f.seek, offset)
        while True:
            size = CHUNK if remaining is None else min(CHUNK, remaining)
            data = await asyncio.to_thread(f.read, size) if size > 0 else b""
            if data:
                if remaining is not None:
                    remaining -= len(data)
                if secrets:
                    data = pending + data
                    cut = data.rfind(b"\n") + 1
                    data, pending = data[:cut], data[cut:]
                    data = _redact(data, secrets)
                if data:
                    yield data
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
            await asyncio.sleep(FOLLOW_POLL_SECONDS)
        if pending:
            yield _redact(pending, secrets or [])
    finally:
        f.close()


def _inode(path: Path) -> int | None:
    try:
        return os.stat(path).st_ino
    except FileNotFoundError:
        return None


def _redact(data: bytes, secrets: list[str]) -> bytes:
    if not secrets:
        return data
    return redact(data.decode("utf-8", errors="surrogateescape"), secrets).encode(
        "utf-8", errors="surrogateescape"
    )
