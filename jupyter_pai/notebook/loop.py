"""The event loop a :class:`~jupyter_pai.Client` runs its I/O on: its own, in a daemon thread.

A Jupyter kernel already runs an asyncio loop in its main thread, so ``asyncio.run`` (or
``run_until_complete``) fails there with "this event loop is already running". Running every
coroutine on a private loop in another thread makes the blocking API work anywhere — a
script, a kernel cell, a thread — and the async twins reach the same loop through
``asyncio.wrap_future``, so one backend (with its open connections and caches) serves both.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import AsyncIterator, Coroutine, Iterator
from typing import Any, TypeVar

T = TypeVar("T")


class LoopThread:
    """A private event loop in a daemon thread, started on first use."""

    def __init__(self, name: str = "jupyter-pai-client") -> None:
        self._name = name
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None or self._loop.is_closed():
                ready = threading.Event()
                loop = asyncio.new_event_loop()

                def serve() -> None:
                    asyncio.set_event_loop(loop)
                    ready.set()
                    loop.run_forever()

                self._thread = threading.Thread(target=serve, name=self._name, daemon=True)
                self._thread.start()
                ready.wait()
                self._loop = loop
            return self._loop

    def in_loop_thread(self) -> bool:
        return self._thread is not None and threading.current_thread() is self._thread

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Run ``coro`` on the loop and block until it is done.

        Ctrl-C (a kernel interrupt) cancels it there before the KeyboardInterrupt goes on,
        so nothing keeps running behind the caller's back; so does ``timeout``
        (``TimeoutError``)."""
        if self.in_loop_thread():
            coro.close()
            raise RuntimeError(
                "a blocking jupyter-pai call from inside the client's own loop: use its *_async twin"
            )
        future = self.submit(coro)
        try:
            return future.result(timeout)
        except (KeyboardInterrupt, concurrent.futures.TimeoutError):
            future.cancel()
            raise

    async def run_async(self, coro: Coroutine[Any, Any, T]) -> T:
        """Await ``coro`` on the client's loop from any other loop (a kernel's)."""
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is self._loop:
            return await coro
        return await asyncio.wrap_future(self.submit(coro))

    def iterate(self, chunks: AsyncIterator[T]) -> Iterator[T]:
        """An async iterator living on the loop, read as a blocking iterator; closing the
        iterator (or an interrupt while it waits) closes the async one there."""
        try:
            while True:
                try:
                    yield self.run(_next(chunks))
                except StopAsyncIteration:
                    return
        finally:
            closer = getattr(chunks, "aclose", None)
            if closer is not None and self._loop is not None and not self._loop.is_closed():
                try:
                    self.submit(closer()).result(5)
                except Exception:
                    pass

    async def iterate_async(self, chunks: AsyncIterator[T]) -> AsyncIterator[T]:
        """The same for a caller on another loop."""
        try:
            while True:
                try:
                    yield await self.run_async(_next(chunks))
                except StopAsyncIteration:
                    return
        finally:
            closer = getattr(chunks, "aclose", None)
            if closer is not None:
                try:
                    await self.run_async(closer())
                except Exception:
                    pass

    def stop(self) -> None:
        """Stop the loop and its thread (pending work is cancelled)."""
        with self._lock:
            loop, thread = self._loop, self._thread
            self._loop = self._thread = None
        if loop is None or loop.is_closed():
            return

        async def cancel_all() -> None:
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        if thread is not None and thread is not threading.current_thread():
            try:
                asyncio.run_coroutine_threadsafe(cancel_all(), loop).result(5)
            except Exception:
                pass
            loop.call_soon_threadsafe(loop.stop)
            thread.join(5)
            loop.close()


async def _next(chunks: AsyncIterator[T]) -> T:
    return await chunks.__anext__()
