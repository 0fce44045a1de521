"""The kubelet endpoint of the runner nodes.

The API server reaches a node's kubelet for logs, port-forward and exec. For runner nodes
that endpoint is this proxy: it answers `/containerLogs/…` itself, from the pod runner's
files, so that `follow` ends when the container has exited (kwok's log server follows
forever); every other request (port-forward, exec) goes on, byte for byte, to the kwok
instance that manages the runner nodes.
"""

from __future__ import annotations

import contextlib
import datetime
import select
import socket
import ssl
import threading
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

_POLL = 0.1


@dataclass
class LogSource:
    path: Path
    done: Callable[[], bool]  # True once the container has exited for good


# (namespace, pod, container, previous) -> where its log is (or its last terminated
# instance's), or None for an unknown container.
Resolver = Callable[[str, str, str, bool], LogSource | None]


def _parse_time(text: str) -> float:
    text = text.strip()
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    if "." in text:  # CRI times have nanoseconds; Python parses microseconds
        head, _, rest = text.partition(".")
        digits = "".join(c for c in rest if c.isdigit())
        zone = rest[len(digits) :]
        text = f"{head}.{digits[:6]}{zone}"
    return datetime.datetime.fromisoformat(text).timestamp()


@dataclass
class LogQuery:
    follow: bool = False
    timestamps: bool = False
    tail_lines: int | None = None
    limit_bytes: int | None = None
    since: float | None = None
    previous: bool = False

    @classmethod
    def parse(cls, query: str) -> LogQuery:
        params = {k: v[-1] for k, v in urllib.parse.parse_qs(query).items()}
        since = None
        if "sinceSeconds" in params:
            since = time.time() - int(params["sinceSeconds"])
        elif "sinceTime" in params:
            since = _parse_time(params["sinceTime"])
        tail = params.get("tailLines", params.get("tail"))
        return cls(
            follow=params.get("follow") in ("true", "1"),
            timestamps=params.get("timestamps") in ("true", "1"),
            tail_lines=int(tail) if tail not in (None, "all", "-1") else None,
            limit_bytes=int(params["limitBytes"]) if "limitBytes" in params else None,
            since=since,
            previous=params.get("previous") in ("true", "1"),
        )


def render(line: bytes, query: LogQuery) -> bytes | None:
    """One CRI log line as `kubectl logs` shows it, or None when filtered out."""
    parts = line.rstrip(b"\n").split(b" ", 3)
    if len(parts) < 3:
        return None
    stamp, _stream, tag = parts[:3]
    text = parts[3] if len(parts) == 4 else b""
    if query.since is not None and _parse_time(stamp.decode()) < query.since:
        return None
    out = (stamp + b" " if query.timestamps else b"") + text
    return out if tag == b"P" else out + b"\n"


class KubeletProxy:
    def __init__(self, port: int, backend_port: int, cert: Path, key: Path, resolve: Resolver):
        self.port, self.backend_port, self.resolve = port, backend_port, resolve
        self.server_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.server_context.load_cert_chain(cert, key)
        self.client_context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        self.client_context.check_hostname = False
        self.client_context.verify_mode = ssl.CERT_NONE  # kwok on loopback, our own cert
        self.listener = socket.create_server(("127.0.0.1", port))

    def start(self) -> None:
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            conn, _ = self.listener.accept()
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, raw: socket.socket) -> None:
        try:
            conn = self.server_context.wrap_socket(raw, server_side=True)
        except (OSError, ssl.SSLError):
            raw.close()
            return
        with conn:
            head = b""
            while b"\r\n\r\n" not in head:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                head += chunk
            request_line = head.split(b"\r\n", 1)[0].decode(errors="replace")
            method, target = [*request_line.split(" "), "", ""][:2]
            url = urllib.parse.urlsplit(target)
            if method == "GET" and url.path.startswith("/containerLogs/"):
                with contextlib.suppress(OSError):
                    self._logs(conn, url)
            else:
                self._forward(conn, head)

    # -- logs -------------------------------------------------------------------------

    def _reply(self, conn: ssl.SSLSocket, status: str, body: bytes = b"") -> None:
        conn.sendall(
            f"HTTP/1.1 {status}\r\nContent-Type: text/plain\r\nConnection: close\r\n"
            f"Content-Length: {len(body)}\r\n\r\n".encode()
            + body
        )

    def _logs(self, conn: ssl.SSLSocket, url: urllib.parse.SplitResult) -> None:
        parts = [urllib.parse.unquote(p) for p in url.path.split("/")[2:]]
        if len(parts) != 3:
            self._reply(conn, "400 Bad Request", b"expected /containerLogs/ns/pod/container")
            return
        query = LogQuery.parse(url.query)
        source = self.resolve(parts[0], parts[1], parts[2], query.previous)
        if source is not None and query.previous and not source.path.exists():
            # What a kubelet answers; the API server passes it on as a 400.
            _, pod, container = parts
            message = f'previous terminated container "{container}" in pod "{pod}" not found'
            self._reply(conn, "400 Bad Request", message.encode())
            return
        if source is None or not source.path.exists():
            # The API server asks only for pods bound here: one the runner has not started
            # yet is, as a kubelet says it, waiting (a 400 the API server passes on).
            _, pod, container = parts
            message = (
                f'container "{container}" in pod "{pod}" is waiting to start: ContainerCreating'
            )
            self._reply(conn, "400 Bad Request", message.encode())
            return
        conn.sendall(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nConnection: close\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n"
        )
        budget = query.limit_bytes

        def send(data: bytes) -> bool:
            nonlocal budget
            if budget is not None:
                data, budget = data[:budget], budget - min(budget, len(data))
            if data:
                conn.sendall(b"%x\r\n%s\r\n" % (len(data), data))
            return budget != 0

        with open(source.path, "rb") as f:
            lines = f.readlines()
            if lines and not lines[-1].endswith(b"\n"):  # a line still being written
                f.seek(-len(lines.pop()), 1)
            if query.tail_lines is not None:
                lines = lines[-query.tail_lines :] if query.tail_lines else []
            going = True
            for line in lines:
                out = render(line, query)
                if out is not None and not (going := send(out)):
                    break
            pending = b""
            while going and query.follow:
                done = source.done()  # read before the file: no line is lost at exit
                chunk = f.readline()
                if chunk:
                    pending += chunk
                    if pending.endswith(b"\n"):
                        out = render(pending, query)
                        pending = b""
                        if out is not None:
                            going = send(out)
                    continue
                if done:
                    break
                time.sleep(_POLL)
        conn.sendall(b"0\r\n\r\n")

    # -- everything else --------------------------------------------------------------

    def _forward(self, conn: ssl.SSLSocket, head: bytes) -> None:
        try:
            backend = self.client_context.wrap_socket(
                socket.create_connection(("127.0.0.1", self.backend_port), timeout=10)
            )
        except OSError:
            with contextlib.suppress(OSError):
                self._reply(conn, "502 Bad Gateway", b"kwok is not reachable")
            return
        with backend:
            backend.sendall(head)
            _splice(conn, backend)


def _splice(a: ssl.SSLSocket, b: ssl.SSLSocket) -> None:
    """Copy both ways until both sides closed. One thread only: an SSL socket must not
    be read and written from two threads at once."""
    peer = {a: b, b: a}
    open_ends = {a, b}
    for sock in peer:
        sock.setblocking(False)
    while open_ends:
        ready = [s for s in open_ends if s.pending()]
        if not ready:
            ready, _, _ = select.select(list(open_ends), [], [], 30)
        for sock in ready:
            try:
                data = sock.recv(65536)
            except (ssl.SSLWantReadError, ssl.SSLWantWriteError, BlockingIOError):
                continue
            except OSError:
                return
            other = peer[sock]
            if not data:  # EOF: pass the half-close on
                open_ends.discard(sock)
                with contextlib.suppress(OSError):
                    other.shutdown(socket.SHUT_WR)
                continue
            other.settimeout(30)
            try:
                other.sendall(data)
            except OSError:
                return
            finally:
                other.setblocking(False)
