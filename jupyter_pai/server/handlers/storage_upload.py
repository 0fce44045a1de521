"""A ``PUT`` body streamed into a storage as it arrives: its piece of the file (from
``Content-Range``), and the pipe that hands the body to the backend's writer in blocks, never
holding more than a few of them (the client waits while the writer is behind)."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator

from ...backends.base import UploadPiece
from ...errors import BadRequest, FieldError, TooLarge

#: Blocks handed to the writer: big enough that a thread hop per block costs nothing.
BLOCK = 1024 * 1024
#: Blocks waiting for the writer before the request's reading pauses.
WAITING = 4
_RANGE = re.compile(r"bytes\s+(\d+)-(\d+)/(\d+)")


class UploadCut(Exception):
    """The connection closed before the whole body arrived."""


def upload_piece(content_length: str | None, content_range: str | None, most: int) -> UploadPiece:
    """The piece a request carries: its ``Content-Length`` bytes, at the place
    ``Content-Range: bytes START-END/TOTAL`` says (END inclusive), else the whole file.
    ``chunks`` is left empty for the caller to fill."""
    if content_length is None or not content_length.strip().isdigit():
        raise BadRequest(
            "an upload needs a Content-Length (a body sent in HTTP chunks has none)",
            [FieldError("Content-Length", "missing; send the piece with its length")],
        )
    size = int(content_length)
    if size > most:
        raise TooLarge(
            f"the request body is {size} bytes; at most {most} are accepted in one request: "
            f"send the file in pieces of at most {most} bytes with Content-Range",
            [FieldError("Content-Length", f"at most {most} bytes per request")],
        )
    if content_range is None:
        return UploadPiece(offset=0, size=size, total=size, chunks=_nothing())
    found = _RANGE.fullmatch(content_range.strip())
    if found is None:
        raise BadRequest(
            f"Content-Range {content_range!r} is not 'bytes START-END/TOTAL'",
            [FieldError("Content-Range", "write it as bytes START-END/TOTAL (END inclusive)")],
        )
    start, end, total = (int(g) for g in found.groups())
    if end < start or end >= total:
        raise BadRequest(
            f"Content-Range {content_range!r} does not lie inside a file of {total} bytes",
            [FieldError("Content-Range", "START <= END < TOTAL")],
        )
    if end - start + 1 != size:
        raise BadRequest(
            f"Content-Range {content_range!r} covers {end - start + 1} bytes but the body "
            f"has {size}",
            [FieldError("Content-Range", "END - START + 1 must be the body's length")],
        )
    return UploadPiece(offset=start, size=size, total=total, chunks=_nothing())


async def _nothing() -> AsyncIterator[bytes]:
    return
    yield b""  # an async generator with no items


class BodyPipe:
    """The request body from ``data_received`` to the writer, in blocks of :data:`BLOCK`.
    ``feed`` waits while :data:`WAITING` blocks are queued (the request reads no further
    meanwhile); ``end`` or ``cut`` finishes the stream; once the writer is gone (``close``),
    whatever still arrives is dropped."""

    def __init__(self) -> None:
        self._queue: asyncio.Queue[bytes | UploadCut | None] = asyncio.Queue(WAITING)
        self._buffer = bytearray()
        self._closed = False
        self._ending: asyncio.Future[None] | None = None

    async def feed(self, data: bytes) -> None:
        if self._closed:
            return
        self._buffer += data
        if len(self._buffer) >= BLOCK:
            block = bytes(self._buffer)
            self._buffer.clear()
            await self._queue.put(block)

    async def end(self) -> None:
        if self._buffer:
            await self._put(bytes(self._buffer))
            self._buffer.clear()
        await self._put(None)

    def cut(self) -> None:
        """The client went: what arrived is still written (it resumes from there)."""
        leftover, self._buffer = bytes(self._buffer), bytearray()

        async def finish() -> None:
            if leftover:
                await self._put(leftover)
            await self._put(UploadCut("the connection closed before the upload's end"))

        self._ending = asyncio.ensure_future(finish())

    async def _put(self, item: bytes | UploadCut | None) -> None:
        if not self._closed:
            await self._queue.put(item)

    def close(self) -> None:
        """The writer is done (or failed): drop what waits and unblock ``feed``."""
        self._closed = True
        while not self._queue.empty():
            self._queue.get_nowait()

    async def chunks(self) -> AsyncIterator[bytes]:
        while True:
            item = await self._queue.get()
            if item is None:
                return
            if isinstance(item, UploadCut):
                raise item
            yield item
