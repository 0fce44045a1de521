"""``GET job-changes``: server-sent events of job changes, so open panels update without
polling. The server's one hub (``backends.jobchanges``) computes the changes; this handler
only streams them: ``event: ready`` once subscribed (list the jobs after it and nothing is
missed), then ``event: added|modified|deleted`` with a ``JobChange``, ``event: reset`` when
the client fell behind (list again), and a comment every ``HEARTBEAT`` seconds."""

from __future__ import annotations

import asyncio
import contextlib
import json

from tornado import web
from tornado.iostream import StreamClosedError

from ...backends.jobchanges import Subscription
from ...backends.models import JobFilter
from ...errors import BadRequest, FieldError
from .base import StreamingHandler, authorized

HEARTBEAT = 15.0
MAX_SECONDS = 24 * 3600.0


def _seconds(raw: str | None) -> float | None:
    if raw is None or raw == "":
        return None
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0 < value <= MAX_SECONDS:
        raise BadRequest(
            f"timeout must be a number of seconds, above 0 and at most {MAX_SECONDS:.0f}",
            [FieldError("timeout", f"got {raw!r}")],
        )
    return value


class JobChangesHandler(StreamingHandler):
    @web.authenticated
    @authorized("read")
    async def get(self) -> None:
        timeout = _seconds(self.get_argument("timeout", None))
        query = JobFilter(
            vc=self.get_argument("vc", None) or None,
            user=self.get_argument("user", None) or None,
            keyword=self.get_argument("keyword", None) or None,
        )
        sub = await self.pai.changes.subscribe(query)
        try:
            self.set_header("Content-Type", "text/event-stream; charset=UTF-8")
            self.set_header("Cache-Control", "no-store")
            self.set_header("X-Accel-Buffering", "no")  # proxies must not hold events back
            await self._send("ready", "{}")
            deadline = None if timeout is None else asyncio.get_running_loop().time() + timeout
            await self._pump(sub, deadline)
        except StreamClosedError:
            pass  # the client left
        finally:
            sub.close()
        with contextlib.suppress(StreamClosedError):
            self.finish()

    async def _pump(self, sub: Subscription, deadline: float | None) -> None:
        loop = asyncio.get_running_loop()
        gone = asyncio.ensure_future(self._gone.wait())
        try:
            while not self._gone.is_set():
                wait = HEARTBEAT
                if deadline is not None:
                    wait = min(wait, deadline - loop.time())
                    if wait <= 0:
                        return
                step = asyncio.ensure_future(sub.get())
                await asyncio.wait({step, gone}, timeout=wait, return_when=asyncio.FIRST_COMPLETED)
                if not step.done():
                    step.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await step
                    if not self._gone.is_set():
                        self.write(": keep-alive\n\n")
                        await self.flush()
                    continue
                change = step.result()
                if change is None:
                    await self._send("reset", "{}")
                    return
                await self._send(change.type, json.dumps(change.to_json()))
        finally:
            gone.cancel()

    async def _send(self, event: str, data: str) -> None:
        self.write(f"event: {event}\ndata: {data}\n\n")
        await self.flush()
