"""``GET jobs/{id}/logs``: a task's log as text, streamed chunk by chunk (never buffered
whole), and kept open while ``follow`` until the task ends or the client leaves."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator, Awaitable, Callable

from tornado import web
from tornado.iostream import IOStream, StreamClosedError

from ...backends.base import LogQuery
from ...errors import BadRequest, FieldError
from .base import PAIHandler, StreamingHandler, authorized

FLUSH_BYTES = 256 * 1024


def _int_arg(handler: PAIHandler, name: str, *, minimum: int = 0) -> int | None:
    raw = handler.get_argument(name, None)
    if raw is None or raw == "":
        return None
    try:
        value = int(raw)
    except ValueError:
        raise BadRequest(
            f"{name} must be a whole number", [FieldError(name, f"got {raw!r}")]
        ) from None
    if value < minimum:
        raise BadRequest(f"{name} must be ≥ {minimum}", [FieldError(name, f"got {value}")])
    return value


async def _until(chunks: AsyncIterator[bytes], gone: asyncio.Event) -> AsyncIterator[bytes]:
    """``chunks`` until the client goes away: a follower of a quiet task would otherwise
    keep the log open, polled, until the task ends."""
    waiter = asyncio.ensure_future(gone.wait())
    try:
        while True:
            step = asyncio.ensure_future(chunks.__anext__())
            await asyncio.wait({step, waiter}, return_when=asyncio.FIRST_COMPLETED)
            if not step.done():
                step.cancel()
                with contextlib.suppress(asyncio.CancelledError, StopAsyncIteration):
                    await step
                return
            try:
                chunk = step.result()
            except StopAsyncIteration:
                return
            yield chunk
    finally:
        waiter.cancel()


class JobLogsHandler(StreamingHandler):
    @web.authenticated
    @authorized("read")
    async def get(self, job_id: str) -> None:
        query = LogQuery(
            role=self.get_argument("role", None) or None,
            index=_int_arg(self, "index") or 0,
            follow=self.get_argument("follow", "false").lower() in ("1", "true", "yes"),
            tail=_int_arg(self, "tail"),
            offset=_int_arg(self, "offset"),
            limit=_int_arg(self, "limit"),
            attempt=_int_arg(self, "attempt"),
        )
        backend = await self.backend()
        stream = await backend.logs(job_id, query)
        self.set_header("Content-Type", "text/plain; charset=UTF-8")
        self.set_header("X-Log-Size", str(stream.size))
        self.set_header("X-Task", f"{stream.role}-{stream.index}")
        self.set_header("Cache-Control", "no-store")
        if query.follow and stream.hand_off is not None and self._plain_http11():
            await self._hand_off(stream.hand_off)
            return
        # A follower gets each chunk at once and is dropped when it leaves; a read of what
        # is written goes out in flushes of FLUSH_BYTES (one, with the end, for a tail),
        # each flush being one more turn of a busy loop.
        chunks = _until(stream.chunks, self._gone) if query.follow else stream.chunks
        unflushed = 0
        try:
            async for chunk in chunks:
                self.write(chunk)
                unflushed += len(chunk)
                if query.follow or unflushed >= FLUSH_BYTES:
                    await self.flush()
                    unflushed = 0
        except StreamClosedError:
            return  # the reader went away; the generator is closed below
        finally:
            await stream.chunks.aclose()  # type: ignore[attr-defined]
        if self._gone.is_set():
            return
        # APIHandler.finish() sets JSON unless told otherwise (seen when nothing was flushed).
        self.finish(set_content_type="text/plain; charset=UTF-8")

    def _plain_http11(self) -> bool:
        """Whether the client's connection may be handed to another process: HTTP/1.1 (the
        body is sent chunked) over a plain socket (a TLS session stays in this one)."""
        connection = self.request.connection
        stream = getattr(connection, "stream", None)
        return (
            self.request.version == "HTTP/1.1"
            and type(stream) is IOStream
            and not self._headers_written
        )

    async def _hand_off(self, hand_off: Callable[[socket.socket, bytes], Awaitable[None]]) -> None:
        """The follow written by the log relay straight to the client's connection: this
        server's loop copies none of it. The head is the one tornado would send."""
        lines = [f"HTTP/1.1 {self.get_status()} {self._reason}"]
        lines += [f"{name}: {value}" for name, value in self._headers.get_all()]
        lines += ["Transfer-Encoding: chunked", "Connection: close"]
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        stream = self.detach()
        try:
            await hand_off(stream.socket, head)
        except OSError as error:  # the relay ended: the client is told, not left waiting
            self.set_status(503)
            body = f"the log relay took no follow: {error}".encode()
            with contextlib.suppress(StreamClosedError):
                await stream.write(
                    b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\n"
                    b"Content-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(body), body)
                )
        finally:
            stream.close()  # this process's descriptor: the relay holds its own
        self._log()
