"""A second event loop, in a daemon thread, for the port-forwards' long-lived streams to the
API server. Their traffic keeps flowing whatever the caller's loop does (a blocking
KernelManager runs its loop only during calls), and under load their first bytes do not
wait behind every request the server's own loop has queued: this thread gets its turn at
the interpreter whatever that loop's backlog. (Log follows go further: a process of their
own, :mod:`.logrelay`.)"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

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
