"""A pod's ports on this machine, through the API server's port-forward: one loopback
listener per port; each connection becomes a port-forward stream to the pod. The traffic
crosses the network inside the API server's TLS. Remote kernels (ZeroMQ, one connection
per channel) and the task-port proxy (HTTP and WebSocket into JupyterLab) use it.

The streams run on an event loop of their own in a daemon thread: they keep flowing
whatever the caller's loop does (a blocking KernelManager runs its loop only during calls,
and a busy server loop does not slow the traffic)."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import threading
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any, TypeVar

import aiohttp
from kubernetes_asyncio.stream import WsApiClient

from .resources import POD
from .rest import path

if TYPE_CHECKING:
    from .backend import KubernetesBackend

log = logging.getLogger(__name__)
CHUNK = 64 * 1024
T = TypeVar("T")
_loop: asyncio.AbstractEventLoop | None = None
_loop_lock = threading.Lock()


def _forwarding_loop() -> asyncio.AbstractEventLoop:
    global _loop
    with _loop_lock:
        if _loop is None:
            _loop = asyncio.new_event_loop()
            threading.Thread(target=_loop.run_forever, name="pai-port-forward", daemon=True).start()
        return _loop


async def _there(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` on the forwarding loop and await it from this one."""
    return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, _forwarding_loop()))


class PortForward:
    """Listeners on 127.0.0.1 for ``ports`` of pod ``pod``; :attr:`local` in the same order."""

    def __init__(self, backend: KubernetesBackend, pod: str, ports: list[int]) -> None:
        assert backend.rest is not None
        self.configuration = backend.rest.api.configuration
        self.namespace = backend.namespace
        self.pod = pod
        self.ports = ports
        self.local: list[int] = []
        self._servers: list[asyncio.Server] = []
        self._pipes: set[asyncio.Task[None]] = set()
        self._ws: WsApiClient | None = None

    async def start(self) -> None:
        await _there(self._start())

    async def reset(self) -> None:
        """Drop every open stream (the kernel behind them was restarted): ZeroMQ then
        reconnects each channel through a fresh port-forward, to the new kernel."""
        await _there(self._cancel_pipes())

    async def close(self) -> None:
        await _there(self._close())

    async def _start(self) -> None:
        self._ws = WsApiClient(configuration=self.configuration)
        for remote in self.ports:
            server = await asyncio.start_server(
                functools.partial(self._accept, port=remote), "127.0.0.1", 0
            )
            self._servers.append(server)
            self.local.append(server.sockets[0].getsockname()[1])

    def _accept(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, port: int
    ) -> None:
        task = asyncio.create_task(self._pipe(reader, writer, port))
        self._pipes.add(task)
        task.add_done_callback(self._pipes.discard)

    async def _pipe(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, port: int
    ) -> None:
        assert self._ws is not None
        try:
            connect: Any = await self._ws.call_api(
                path(POD, self.namespace, self.pod, "portforward"),
                "GET",
                query_params=[("ports", str(port))],
                header_params={},
                auth_settings=["BearerToken"],
                _preload_content=False,
            )
            async with connect as ws:
                upstream = asyncio.create_task(self._upstream(reader, ws))
                try:
                    await self._downstream(ws, writer, port)
                finally:
                    upstream.cancel()
                    with contextlib.suppress(asyncio.CancelledError, Exception):
                        await upstream
        except (aiohttp.ClientError, OSError, ValueError) as error:
            log.debug("jupyter-pai: port-forward to %s:%s ended: %s", self.pod, port, error)
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    @staticmethod
    async def _upstream(reader: asyncio.StreamReader, ws: aiohttp.ClientWebSocketResponse) -> None:
        while data := await reader.read(CHUNK):
            await ws.send_bytes(b"\x00" + data)  # channel 0: the port's data
        await ws.close()

    @staticmethod
    async def _downstream(
        ws: aiohttp.ClientWebSocketResponse, writer: asyncio.StreamWriter, port: int
    ) -> None:
        seen: set[int] = set()
        async for msg in ws:
            if msg.type != aiohttp.WSMsgType.BINARY or not msg.data:
                continue
            channel, payload = msg.data[0], msg.data[1:]
            if channel not in seen:  # each channel's first frame is the port (2 bytes)
                seen.add(channel)
                payload = payload[2:]
            if channel == 1 and payload:
                raise ValueError(f"port {port}: {payload.decode(errors='replace')}")
            if channel == 0 and payload:
                writer.write(payload)
                await writer.drain()

    async def _cancel_pipes(self) -> None:
        for task in list(self._pipes):
            task.cancel()
        for task in list(self._pipes):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    async def _close(self) -> None:
        for server in self._servers:
            server.close()
        await self._cancel_pipes()
        if self._ws is not None:
            await self._ws.close()
            self._ws = None


class TaskPortForwards:
    """The task-port proxy's forwards, one per (pod, port), opened on first use and
    reused by every later request; a forward whose pod has gone is closed on the next
    use, the rest when the backend closes."""

    def __init__(self, backend: KubernetesBackend) -> None:
        self.backend = backend
        self._forwards: dict[tuple[str, int], PortForward] = {}
        self._lock = asyncio.Lock()

    async def local_port(self, pod: str, port: int) -> int:
        async with self._lock:
            await self._drop_gone()
            forward = self._forwards.get((pod, port))
            if forward is None:
                forward = PortForward(self.backend, pod, [port])
                await forward.start()
                self._forwards[(pod, port)] = forward
            return forward.local[0]

    def opened(self) -> list[tuple[str, int]]:
        """(pod, port) of each forward open now."""
        return list(self._forwards)

    async def _drop_gone(self) -> None:
        pods = self.backend.views.cache["pods"]
        for key in [k for k in self._forwards if pods.get(k[0]) is None]:
            await self._forwards.pop(key).close()

    async def close(self) -> None:
        async with self._lock:
            for forward in self._forwards.values():
                await forward.close()
            self._forwards.clear()
