"""HTTP/1.1 to the storage helper pod's server over the API server's port-forward
WebSocket (``v4.channel.k8s.io``: channel 0 carries the port's bytes, channel 1 its
errors; the first frame on each channel starts with the port number, 2 bytes).

Both ways stream: a request body goes out in frames of up to :data:`FRAME` bytes as the
caller's iterator gives them, and the answer's body comes back as an iterator of the
frames' payloads, read from the socket only as the consumer asks (its backpressure is the
WebSocket's TCP window). The pod's server closes each connection after its answer, but
the forwarded stream is not closed with it: a Content-Length or the chunked encoding's
last chunk ends an answer."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any, cast

import aiohttp

FRAME = 1024 * 1024
#: A stream that sends nothing this long is taken as dead (a pod gone mid-answer).
SILENCE = 120.0


class PortRefused(ConnectionRefusedError):
    """Nobody listens on the port (yet): the server starts just after the pod runs."""


class _Frames:
    """Channel 0's bytes from ``ws``, as frames come, with a read-ahead buffer for the
    HTTP framing; a channel 1 message raises."""

    def __init__(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        self.ws = ws
        self.seen: set[int] = set()
        self.buffer = bytearray()

    async def _frame(self) -> bytes:
        while True:
            try:
                msg = await self.ws.receive(timeout=SILENCE)
            except asyncio.TimeoutError:
                raise ValueError(
                    f"the storage helper pod sent nothing for {SILENCE:.0f} s"
                ) from None
            if msg.type in (
                aiohttp.WSMsgType.CLOSE,
                aiohttp.WSMsgType.CLOSED,
                aiohttp.WSMsgType.CLOSING,
            ):
                raise ValueError("the port-forward closed before the whole answer came")
            if msg.type == aiohttp.WSMsgType.ERROR:
                raise ValueError(f"the port-forward failed: {msg.data}")
            if msg.type != aiohttp.WSMsgType.BINARY or not msg.data:
                continue
            data: bytes = msg.data
            channel, start = data[0], 1
            if channel not in self.seen:
                self.seen.add(channel)
                start = 3
            if channel == 1 and len(data) > start:
                text = data[start:].decode(errors="replace")
                if "refused" in text:
                    raise PortRefused(text)
                raise ValueError(f"port-forward error: {text}")
            if channel == 0 and len(data) > start:
                return data[start:]

    async def until(self, mark: bytes, limit: int = 64 * 1024) -> bytes:
        """The bytes up to and without ``mark`` (a header block, a chunk-size line)."""
        while (at := self.buffer.find(mark)) < 0:
            if len(self.buffer) > limit:
                raise ValueError("the storage helper pod's answer is malformed")
            self.buffer += await self._frame()
        out = bytes(self.buffer[:at])
        del self.buffer[: at + len(mark)]
        return out

    async def some(self, most: int) -> bytes:
        """Up to ``most`` bytes: the buffer's, else the next frame's (whole when it fits,
        so a large body is passed on frame by frame without copies)."""
        if not self.buffer:
            frame = await self._frame()
            if len(frame) <= most:
                return frame
            self.buffer += frame
        out = bytes(self.buffer[:most])
        del self.buffer[:most]
        return out

    async def exactly(self, n: int) -> bytes:
        parts = []
        while n > 0:
            part = await self.some(n)
            parts.append(part)
            n -= len(part)
        return b"".join(parts)


@dataclass
class Answer:
    """An answer whose body is read as :meth:`chunks` is iterated; :meth:`close` ends the
    stream (also when the body was not read: the pod's server then sees a closed pipe)."""

    status: int
    headers: dict[str, str]
    frames: _Frames
    on_close: Callable[[], None] | None = None
    _closed: bool = field(default=False, repr=False)

    @property
    def size(self) -> int | None:
        length = self.headers.get("content-length")
        return int(length) if length is not None else None

    async def chunks(self) -> AsyncIterator[bytes]:
        try:
            if self.headers.get("transfer-encoding", "").lower() == "chunked":
                while True:
                    line = await self.frames.until(b"\r\n")
                    try:
                        size = int(line.split(b";")[0], 16)
                    except ValueError:  # the server's way to say it failed mid-stream
                        raise ValueError(line.decode(errors="replace")) from None
                    if size == 0:
                        await self.frames.until(b"\r\n")
                        return
                    while size > 0:
                        part = await self.frames.some(size)
                        size -= len(part)
                        yield part
                    await self.frames.exactly(2)
            else:
                left = self.size or 0
                while left > 0:
                    part = await self.frames.some(left)
                    left -= len(part)
                    yield part
        finally:
            await self.close()

    async def read(self) -> bytes:
        return b"".join([part async for part in self.chunks()])

    async def json(self) -> Any:
        return json.loads(await self.read())

    async def close(self) -> None:
        if not self._closed:
            self._closed = True
            if self.on_close is not None:
                self.on_close()
            await self.frames.ws.close()


async def exchange(
    connect: Any,
    head: bytes,
    body: AsyncIterator[bytes] | None = None,
    length: int = 0,
) -> Answer:
    """Sends ``head`` and ``length`` bytes of ``body`` through the port-forward WebSocket
    ``connect`` opens, then reads the answer's status line and headers. The pod's server
    reads every request body to its end before it answers."""
    ws: aiohttp.ClientWebSocketResponse = await connect
    try:
        frames = _Frames(ws)
        sender = asyncio.ensure_future(_send(ws, head, body, length))
        # Read while sending: a refused port says so on channel 1 and closes the stream.
        reading = asyncio.ensure_future(frames.until(b"\r\n\r\n"))
        done, _ = await asyncio.wait({sender, reading}, return_when=asyncio.FIRST_COMPLETED)
        if reading in done and reading.exception() is not None:
            sender.cancel()
            await asyncio.gather(sender, return_exceptions=True)
            reading.result()
        try:
            await sender
        except BaseException:
            # Closing ends the pending receive (a cancelled one may not end at once).
            await ws.close()
            await asyncio.gather(reading, return_exceptions=True)
            raise
        block = await reading
    except BaseException:
        await ws.close()
        raise
    lines = block.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ", 2)
    if len(parts) < 2 or not parts[1].isdigit():
        await ws.close()
        raise ValueError(f"the storage helper pod answered {lines[0]!r}")
    headers = {}
    for line in lines[1:]:
        key, _, value = line.partition(":")
        headers[key.strip().lower()] = value.strip()
    return Answer(int(parts[1]), headers, frames)


async def _send(
    ws: aiohttp.ClientWebSocketResponse,
    head: bytes,
    body: AsyncIterator[bytes] | None,
    length: int,
) -> None:
    frame = bytearray(b"\x00")
    frame += head
    sent = 0
    if body is not None:
        async for chunk in body:
            sent += len(chunk)
            if sent > length:
                raise OverflowError(f"the piece is longer than its {length} bytes")
            view = memoryview(chunk)
            while view:
                room = FRAME + 1 - len(frame)
                frame += view[:room]
                view = view[room:]
                if len(frame) > FRAME:
                    await ws.send_bytes(cast(bytes, frame))  # a bytearray: sent as is, no copy
                    frame = bytearray(b"\x00")
    if sent < length:
        raise EOFError(f"the piece ended after {sent} of its {length} bytes")
    if len(frame) > 1:
        await ws.send_bytes(cast(bytes, frame))  # a bytearray: sent as is, no copy
