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

#: A ``ready`` request not answered within this is sent again (on the same socket: the
#: first may have gone with a stream that was cut). The launcher answers within 1 s.
READY_AGAIN_SECONDS = 2.0


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
            reply = await self._reply(sock, {(sent or {})["header"]["msg_id"]}, timeout)
            if reply is None:
                # A reconnecting DEALER may hold the request: start afresh next time.
                self.close()
                raise LauncherUnreachable(f"no answer from the kernel launcher at {self.address}")
            return reply

    async def _reply(self, sock: Any, asked: set[str], timeout: float) -> dict[str, Any] | None:
        """The content of the first reply to one of the requests ``asked`` (older replies
        are skipped), or None after ``timeout``."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not await sock.poll(int(left * 1000)):
                return None
            _, msg = self.session.feed_identities(await sock.recv_multipart(), copy=True)
            reply = self.session.deserialize(msg, content=True, copy=True)
            if reply["parent_header"].get("msg_id") in asked:
                content: dict[str, Any] = reply["content"]
                return content

    async def wait_ready(self, timeout: float) -> dict[str, Any]:
        """Ask until the launcher answers that its kernel listens (or has ended): it
        answers a ``ready`` request once its kernel listens, or within a second saying it
        does not yet. One socket throughout, so a request made early waits in the
        connection; sent again if no answer came at all (a stream cut). The last answer."""
        deadline = time.monotonic() + timeout
        async with self._lock:
            sock = self._socket()
            asked: set[str] = set()
            while (left := deadline - time.monotonic()) > 0:
                sent = self.session.send(sock, "ready", {})
                asked.add((sent or {})["header"]["msg_id"])
                reply = await self._reply(sock, asked, min(READY_AGAIN_SECONDS, left))
                if reply is None:
                    continue
                # A launcher that does not say (an older one) is taken as listening.
                if reply.get("listening", True) or reply.get("exit_code") is not None:
                    return reply
                asked.clear()  # answered: what comes later answers the next request
            self.close()
            raise LauncherUnreachable(
                f"the kernel launcher at {self.address} did not answer that its kernel "
                f"listens within {timeout:g} s"
            )

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
