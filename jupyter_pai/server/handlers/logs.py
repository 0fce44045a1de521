"""``GET jobs/{id}/logs``: a task's log as text, streamed chunk by chunk (never buffered
whole), and kept open while ``follow`` until the task ends or the client leaves."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from tornado import web
from tornado.iostream import IOStream, StreamClosedError

from ...backends.base import ClientConnection, LogQuery
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
        connection = self._offer() if query.follow else None
        stream = await backend.logs(job_id, query, connection)
        if stream.taken:
            # The log relay writes the follow to the connection (it sent the head): this
            # process lets its own descriptor of it go, having written nothing there.
            self.detach().close()
            self._log()
            return
        self._set_log_headers(stream.size, stream.role, stream.index)
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

    def _set_log_headers(self, size: int, role: str, index: int) -> None:
        self.set_header("Content-Type", "text/plain; charset=UTF-8")
        self.set_header("X-Log-Size", str(size))
        self.set_header("X-Task", f"{role}-{index}")
        self.set_header("Cache-Control", "no-store")

    def _offer(self) -> ClientConnection | None:
        """The client's connection, offered for the backend to write the follow to from
        another process (the log relay): where it is HTTP/1.1 (the body is sent chunked)
        over a plain socket (a TLS session stays in this one)."""
        stream = getattr(self.request.connection, "stream", None)
        if self.request.version != "HTTP/1.1" or type(stream) is not IOStream:
            return None

        def head(role: str, index: int) -> bytes:
            """The response's head as tornado would send it."""
            self._set_log_headers(0, role, index)
            lines = [f"HTTP/1.1 {self.get_status()} {self._reason}"]
            lines += [f"{name}: {value}" for name, value in self._headers.get_all()]
            lines += ["Transfer-Encoding: chunked", "Connection: close"]
            return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")

        return ClientConnection(stream.socket, head)
