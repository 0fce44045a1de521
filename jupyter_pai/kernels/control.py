"""The server's side of the launcher's control port: signed requests, each answered once.

A DEALER socket (not REQ) so a request that timed out leaves no state behind; replies to
an older request are skipped by their parent's message id. Where the launcher is reached
at the pod IP its port is a CurveZMQ server: ``server_key`` is its public key."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import zmq
import zmq.asyncio
from jupyter_client.session import Session

#: How long one ping waits for its answer while the launcher starts (its answer, once it
#: listens, takes milliseconds; a slower one is asked again).
PING_TRY_SECONDS = 0.1


class LauncherUnreachable(Exception):
    """The launcher did not answer in time (not started yet, or gone)."""


def _dealer(context: Any, address: str, server_key: bytes | None) -> Any:
    sock = context.socket(zmq.DEALER)
    sock.linger = 0
    if server_key is not None:
        sock.curve_serverkey = server_key
        sock.curve_publickey, sock.curve_secretkey = zmq.curve_keypair()
    sock.connect(address)
    return sock


class LauncherControl:
    def __init__(self, key: bytes, address: str, server_key: bytes | None = None) -> None:
        self.session = Session(key=key, signature_scheme="hmac-sha256")
        self.address = address
        self.server_key = server_key
        self._context = zmq.asyncio.Context.instance()
        self._sock: zmq.asyncio.Socket | None = None
        self._lock = asyncio.Lock()

    def _socket(self) -> zmq.asyncio.Socket:
        if self._sock is None:
            self._sock = _dealer(self._context, self.address, self.server_key)
        return self._sock

    async def request(
        self, msg_type: str, content: dict[str, Any] | None = None, timeout: float = 5.0
    ) -> dict[str, Any]:
        async with self._lock:
            sock = self._socket()
            sent = self.session.send(sock, msg_type, content or {})
            deadline = time.monotonic() + timeout
            while True:
                left = deadline - time.monotonic()
                if left <= 0 or not await sock.poll(int(left * 1000)):
                    # A reconnecting DEALER may hold the request: start afresh next time.
                    self.close()
                    raise LauncherUnreachable(
                        f"no answer from the kernel launcher at {self.address}"
                    )
                _, msg = self.session.feed_identities(await sock.recv_multipart(), copy=True)
                reply = self.session.deserialize(msg, content=True, copy=True)
                if reply["parent_header"].get("msg_id") == (sent or {})["header"]["msg_id"]:
                    content_: dict[str, Any] = reply["content"]
                    return content_

    async def wait_ready(self, timeout: float) -> dict[str, Any]:
        """Ask until the launcher answers (it starts listening a moment after its task)."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                # Short tries: through a port-forward, a ping sent before the launcher
                # listens is lost with the stream the pod refused, never answered.
                return await self.request(
                    "ping", timeout=min(PING_TRY_SECONDS, max(0.05, deadline - time.monotonic()))
                )
            except LauncherUnreachable:
                if time.monotonic() >= deadline:
                    raise

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close(linger=0)
            self._sock = None


class Heartbeat:
    """Pings the launcher from a thread of its own, so it goes on whatever the event loop
    does (a blocking KernelManager runs its loop only during calls) and stops only with
    this process or :meth:`stop`: then the launcher's idle timer starts."""

    def __init__(
        self, key: bytes, address: str, every: float, server_key: bytes | None = None
    ) -> None:
        self.session = Session(key=key, signature_scheme="hmac-sha256")
        self.address = address
        self.server_key = server_key
        self.every = every
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="pai-kernel-heartbeat", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def _run(self) -> None:
        sock = _dealer(zmq.Context.instance(), self.address, self.server_key)
        try:
            while not self._stop.wait(self.every):
                self.session.send(sock, "ping", {})
                if sock.poll(int(self.every * 1000)):
                    sock.recv_multipart()  # the answer only drains the queue
        finally:
            sock.close(linger=0)
