"""A kernel pod's ports on this machine, through the API server's port-forward: one
loopback listener per port; each connection (ZeroMQ opens one per channel) becomes a
port-forward stream to the pod. The traffic crosses the network inside the API server's
TLS, so the kernel needs no CurveZMQ here.

The streams run on an event loop of their own in a daemon thread: they keep flowing
whatever the caller's loop does (a blocking KernelManager runs its loop only during calls,
and a busy server loop does not slow the kernel's traffic)."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

import aiohttp
from kubernetes_asyncio.stream import WsApiClient

from ..backends.kubernetes.backend import KubernetesBackend
from ..backends.kubernetes.naming import JobNames
from ..backends.kubernetes.resources import POD
from ..backends.kubernetes.rest import path
from ..backends.models import JobDetail
from ..errors import Unavailable

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


def running_pod(backend: KubernetesBackend, job: JobDetail) -> str:
    """The name of the kernel job's running pod (the one with the task's IP)."""
    primary = backend.views.primary(job.id)
    names = JobNames.from_annotations(primary["metadata"]["annotations"])
    ip = job.tasks[0].ip
    for _, _, pod in backend.views.pods(names):
        status = pod.get("status") or {}
        if status.get("phase") == "Running" and status.get("podIP") == ip:
            return str(pod["metadata"]["name"])
    raise Unavailable(f"job {job.id} has no running pod at {ip}")


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
