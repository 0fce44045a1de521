"""A pod's ports on this machine, through the API server's port-forward: one listener
per port; each connection becomes a port-forward stream to the pod. The traffic crosses
the network inside the API server's TLS. Remote kernels (ZeroMQ, one connection per
channel) and the task-port proxy (HTTP and WebSocket into JupyterLab) use it.

The listeners are Unix sockets in a folder of their own that only this user may enter
(0700), not loopback ports: another user of this machine cannot connect to a pod with
this user's credentials behind the connection.

A forward may be *patient* (a kernel's): a connection made before the pod's program
listens is not dropped with the refused stream, losing what the client sent; the stream
is opened again, with those bytes, until the program answers or the patience runs out.
A client that connects early (ZeroMQ at once, with its first request) is then answered
the moment the program listens, not after its own retry timer.

The streams run on the side loop (:mod:`.sideloop`): they keep flowing whatever the
caller's loop does."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import shutil
import tempfile
from typing import TYPE_CHECKING, Any, Protocol

import aiohttp

from .kubeclient import WsApiClient
from .resources import POD
from .rest import path
from .sideloop import there

if TYPE_CHECKING:
    from .jobviews import JobViews
    from .rest import Rest


class Forwarding(Protocol):
    """What forwards need of the backend (:class:`.KubernetesBackend`): its connection,
    namespace and watched pods."""

    @property
    def rest(self) -> Rest | None: ...

    @property
    def namespace(self) -> str: ...

    @property
    def views(self) -> JobViews: ...


log = logging.getLogger(__name__)
CHUNK = 64 * 1024
#: A patient forward holds at most this much of what a client sent before the pod's
#: program first answered (a ZeroMQ greeting and a request or two), to send it again on
#: the next stream; a client that sends more is no longer held.
HELD_LIMIT = 256 * 1024
#: The pause before a refused stream is opened again, growing to REFUSED_PAUSE_MAX.
REFUSED_PAUSE, REFUSED_PAUSE_MAX = 0.05, 0.25


async def open_stream(ws: WsApiClient, namespace: str, pod: str, port: int) -> Any:
    """The API server's port-forward WebSocket to ``port`` of ``pod`` (``async with`` it)."""
    return await ws.call_api(
        path(POD, namespace, pod, "portforward"),
        "GET",
        query_params=[("ports", str(port))],
        header_params={},
        auth_settings=["BearerToken"],
        _preload_content=False,
    )


class _Refused(Exception):
    """The pod's port refused the stream: nothing the client sent reached it."""


class _Held:
    """What a patient connection's client sent before the pod's program first answered."""

    def __init__(self, patient: bool) -> None:
        self.patient = patient
        self.data = bytearray()

    def keep(self, data: bytes) -> None:
        if self.patient:
            self.data += data
            if len(self.data) > HELD_LIMIT:
                self.answered()

    def answered(self) -> None:
        """The program has answered (or too much is held): a later stream's end is the
        connection's end."""
        self.patient = False
        self.data = bytearray()


class PortForward:
    """Listeners for ``ports`` of pod ``pod``: the Unix socket ``{prefix}-{port}`` for each
    (the way jupyter_client names ``ipc`` channels)."""

    def __init__(
        self, backend: Forwarding, pod: str, ports: list[int], patience: float = 0.0
    ) -> None:
        assert backend.rest is not None
        #: How long a connection's refused streams are opened again (0: never).
        self.patience = patience
        self.configuration = backend.rest.api.configuration
        self.namespace = backend.namespace
        self.pod = pod
        self.ports = ports
        self.folder = tempfile.mkdtemp(prefix="pai-forward-")  # 0700
        self.prefix = os.path.join(self.folder, "port")
        self._servers: dict[int, asyncio.Server] = {}
        self._pipes: set[asyncio.Task[None]] = set()
        self._ws: WsApiClient | None = None

    def socket(self, port: int) -> str:
        """The Unix socket that reaches ``port`` of the pod."""
        return f"{self.prefix}-{port}"

    async def start(self) -> None:
        await there(self._start())

    async def reset(self) -> None:
        """Drop every open stream (the kernel behind them was restarted): ZeroMQ then
        reconnects each channel through a fresh port-forward, to the new kernel. Each socket
        is made anew: jupyter_client removes ``ipc`` files on a restart."""
        await there(self._reset())

    async def close(self) -> None:
        await there(self._close())

    async def _start(self) -> None:
        self._ws = WsApiClient(configuration=self.configuration)
        for remote in self.ports:
            await self._listen(remote)

    async def _listen(self, remote: int) -> None:
        self._servers[remote] = await asyncio.start_unix_server(
            functools.partial(self._accept, port=remote), self.socket(remote)
        )

    async def _reset(self) -> None:
        await self._cancel_pipes()
        for remote, server in list(self._servers.items()):
            server.close()
            await self._listen(remote)  # replaces a socket file left, makes a removed one

    def _accept(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, port: int
    ) -> None:
        task = asyncio.create_task(self._pipe(reader, writer, port))
        self._pipes.add(task)
        task.add_done_callback(self._pipes.discard)

    async def _pipe(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, port: int
    ) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.patience
        held = _Held(patient=self.patience > 0)
        pause = REFUSED_PAUSE
        try:
            while True:
                try:
                    await self._stream(reader, writer, port, held)
                    return
                except _Refused as refused:
                    if not held.patient or loop.time() + pause > deadline:
                        raise ValueError(str(refused)) from None
                await asyncio.sleep(pause)
                pause = min(REFUSED_PAUSE_MAX, pause * 1.5)
        except (aiohttp.ClientError, OSError, ValueError) as error:
            log.debug("jupyter-pai: port-forward to %s:%s ended: %s", self.pod, port, error)
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _stream(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, port: int, held: _Held
    ) -> None:
        """One port-forward stream for the connection: what is held first, then both ways
        until either side ends; :class:`_Refused` if the pod's port refused it."""
        assert self._ws is not None
        connect = await open_stream(self._ws, self.namespace, self.pod, port)
        async with connect as ws:
            resent = True
            if held.data:
                try:
                    await ws.send_bytes(b"\x00" + bytes(held.data))
                except (ConnectionResetError, aiohttp.ClientError):
                    resent = False  # already closing (a refusal): its end says why
            upstream = asyncio.create_task(self._upstream(reader, ws, held))
            try:
                await self._downstream(ws, writer, port, held)
            finally:
                upstream.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await upstream
            if held.patient and not resent:
                raise _Refused(f"port {port}: the stream closed before it took the held bytes")

    @staticmethod
    async def _upstream(
        reader: asyncio.StreamReader, ws: aiohttp.ClientWebSocketResponse, held: _Held
    ) -> None:
        while data := await reader.read(CHUNK):
            held.keep(data)  # before sending: a refused stream loses it
            await ws.send_bytes(b"\x00" + data)  # channel 0: the port's data
        held.patient = False  # the client is done: nothing to open again for
        await ws.close()

    @staticmethod
    async def _downstream(
        ws: aiohttp.ClientWebSocketResponse, writer: asyncio.StreamWriter, port: int, held: _Held
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
                error = f"port {port}: {payload.decode(errors='replace')}"
                if held.patient and "refused" in error:
                    raise _Refused(error)
                raise ValueError(error)
            if channel == 0 and payload:
                held.answered()
                writer.write(payload)
                await writer.drain()

    async def _cancel_pipes(self) -> None:
        for task in list(self._pipes):
            task.cancel()
        for task in list(self._pipes):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    async def _close(self) -> None:
        for server in self._servers.values():
            server.close()
        self._servers.clear()
        shutil.rmtree(self.folder, ignore_errors=True)
        await self._cancel_pipes()
        if self._ws is not None:
            await self._ws.close()
            self._ws = None


class TaskPortForwards:
    """The task-port proxy's forwards, one per (pod, port), opened on first use and
    reused by every later request; a forward whose pod has gone is closed on the next
    use, the rest when the backend closes."""

    def __init__(self, backend: Forwarding) -> None:
        self.backend = backend
        self._forwards: dict[tuple[str, int], PortForward] = {}
        self._lock = asyncio.Lock()

    async def local_socket(self, pod: str, port: int) -> str:
        """The Unix socket that reaches ``port`` of ``pod``."""
        async with self._lock:
            await self._drop_gone()
            forward = self._forwards.get((pod, port))
            if forward is None:
                forward = PortForward(self.backend, pod, [port])
                await forward.start()
                self._forwards[(pod, port)] = forward
            return forward.socket(port)

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
