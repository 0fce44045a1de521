"""A second event loop, in a daemon thread, for the long-lived streams to the API server:
port-forwards and log follows. Their traffic keeps flowing whatever the caller's loop does
(a blocking KernelManager runs its loop only during calls), and under load their first
bytes do not wait behind every request the server's own loop has queued: this thread gets
its turn at the interpreter whatever that loop's backlog."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncGenerator, Coroutine
from typing import TYPE_CHECKING, Any, TypeVar

from .rest import Rest

if TYPE_CHECKING:
    from .kubeclient import Configuration

T = TypeVar("T")
_loop: asyncio.AbstractEventLoop | None = None
_loop_lock = threading.Lock()


def side_loop() -> asyncio.AbstractEventLoop:
    global _loop
    with _loop_lock:
        if _loop is None:
            _loop = asyncio.new_event_loop()
            threading.Thread(target=_loop.run_forever, name="pai-streams", daemon=True).start()
        return _loop


async def there(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` on the side loop and await it from this one."""
    return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, side_loop()))


async def _next(chunks: AsyncGenerator[bytes, None]) -> bytes | None:
    try:
        return await chunks.__anext__()
    except StopAsyncIteration:
        return None


async def relayed(chunks: AsyncGenerator[bytes, None]) -> AsyncGenerator[bytes, None]:
    """``chunks``, a generator of the side loop, read from this loop one at a time (the
    reader's pace holds the stream back); closing this closes it there."""
    try:
        while (chunk := await there(_next(chunks))) is not None:
            yield chunk
    finally:
        await there(chunks.aclose())


class SideRest:
    """A :class:`Rest` of the side loop, with the same configuration (credentials) as the
    server's own: made on first use there, closed with the backend."""

    def __init__(self, configuration: Configuration, timeout: float) -> None:
        self._configuration = configuration
        self._timeout = timeout
        self._rest: Rest | None = None

    def rest(self) -> Rest:
        """On the side loop only."""
        if self._rest is None:
            from .kubeclient import ApiClient

            self._rest = Rest(ApiClient(configuration=self._configuration), timeout=self._timeout)
        return self._rest

    async def close(self) -> None:
        if self._rest is not None:
            rest, self._rest = self._rest, None
            await there(rest.api.close())
