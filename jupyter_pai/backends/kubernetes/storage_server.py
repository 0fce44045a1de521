"""The storage helper pod's server (:mod:`.storage`): listings, files, uploads and the other
writes of the mounted claim, over HTTP, to requests carrying the pod's token. Shipped as
source in the pod's command together with :mod:`..storage_ops` (whose import below the
shipper replaces by its source, and that of :mod:`..storage_walk` and
:mod:`..storage_archive`), so all import only the standard library (any image with
python3 >= 3.8 runs it).

argv: root, port, seconds without a request after which it exits; env: PAI_HELPER_TOKEN.
It listens on the pod's own loopback (port-forward connects there inside the pod's network
namespace): 127.0.0.1, or where the pod has no namespace of its own (the test cluster's pod
runner) the address ``JUPYTER_PAI_POD_LOOPBACK`` gives it, never a shared 127.0.0.1. The
owner deletes an idle pod itself; exiting when nobody asks for longer covers an owner that
was killed and never comes back.

Every request may carry ``hidden=1``: hidden files are then served (the server says so
when its ``ContentsManager.allow_hidden`` is on); without it they are refused (403, kind
"hidden") and left out of listings and archives.

Every answer but a file or an archive is JSON; errors carry the status of their
``OpError`` kind and ``{"error": kind, "message": ..., "received": n}``. Files stream with
their Content-Length, archives chunked (their size is not known before the end); a PUT's
body is read as it comes into ``write_piece``, and always to its end (so the client, which
sends the whole body before it reads the answer, never waits on a full pipe)."""

from __future__ import annotations

import http.server
import json
import os
import sys
import threading
import time
import urllib.parse
from collections.abc import Iterator
from typing import Any

from jupyter_pai.backends.storage_ops import (  # SHIPPED: replaced by storage_ops' source
    OpError,
    Rules,
    archive,
    delete,
    discard_upload,
    make_folder,
    move,
    read,
    upload_received,
    write_piece,
)

BLOCK = 1024 * 1024
STATUS = {
    "badpath": 400,
    "isdir": 400,
    "outside": 403,
    "hidden": 403,
    "protected": 403,
    "readonly": 403,
    "token": 403,
    "missing": 404,
    "exists": 409,
    "notempty": 409,
    "offset": 409,
    "notdir": 409,
    "full": 507,
    "denied": 403,
    "range": 400,
    "busy": 409,
}
#: How long a piece (or the state) waits for an earlier writer of the same file: a cut
#: connection's thread finishing what arrived.
BUSY_SECONDS = 10.0
_writers: dict[str, threading.Lock] = {}
_writers_lock = threading.Lock()


def one_writer(rel: str) -> threading.Lock:
    """The lock of file ``rel``: two writers of one temporary file would mix their bytes."""
    key = "/".join(p for p in rel.replace("\\", "/").split("/") if p not in ("", "."))
    with _writers_lock:
        return _writers.setdefault(key, threading.Lock())


def body_chunks(rfile: Any, length: int, left: list[int]) -> Iterator[bytes]:
    """A request body of ``length`` bytes as it arrives; ``left[0]``: what is unread."""
    left[0] = length
    while left[0] > 0:
        try:
            data = rfile.read(min(BLOCK, left[0]))
        except OSError as error:  # a timeout, a reset
            raise ConnectionError(f"the request body broke off: {error}") from None
        if not data:
            raise ConnectionError("the request body ended early")
        left[0] -= len(data)
        yield data


def main() -> None:
    root = os.path.realpath(sys.argv[1])
    port, idle_exit = int(sys.argv[2]), float(sys.argv[3])
    token = os.environ["PAI_HELPER_TOKEN"]
    last_request = [time.monotonic()]

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        timeout = 120  # a body that stalls this long is a cut: its bytes so far are kept

        def log_message(self, *args: Any) -> None:
            pass

        def _query(self) -> dict[str, str]:
            query = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query)
            return {k: v[0] for k, v in query.items()}

        def _send(self, status: int, doc: Any) -> None:
            body = json.dumps(doc).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(body)
            self.close_connection = True

        def _error(self, error: OpError) -> None:
            received = getattr(error, "received", 0) or 0
            doc = {"error": error.kind, "message": error.message, "received": received}
            self._send(STATUS.get(error.kind, 500), doc)

        def _serve(self, method: str) -> None:
            last_request[0] = time.monotonic()
            left = [int(self.headers.get("Content-Length") or 0)]
            try:
                if self.headers.get("X-Token") != token:
                    raise OpError("token", "wrong token")
                query = self._query()
                rel = query.get("path", ".")
                rules = Rules(hidden=query.get("hidden") == "1")
                if method == "GET":
                    self._get(rel, query, rules)
                elif method == "PUT":
                    chunks = body_chunks(self.rfile, left[0], left)
                    offset, total = int(query["offset"]), int(query["total"])
                    lock = one_writer(rel)
                    if not lock.acquire(timeout=BUSY_SECONDS):
                        raise OpError("busy", f"an upload to {rel!r} is under way")
                    try:
                        done = write_piece(root, rel, offset, total, chunks, rules)
                    finally:
                        lock.release()
                    self._send(200, done)
                elif method == "POST":
                    self._send(201, make_folder(root, rel, rules))
                elif method == "PATCH":
                    self._send(200, move(root, rel, query["to"], rules))
                elif method == "DELETE" and query.get("upload") == "1":
                    discard_upload(root, rel, rules)
                    self._send(200, {})
                elif method == "DELETE":
                    delete(root, rel, query.get("recursive") == "1", rules)
                    self._send(200, {})
            except OpError as error:
                self._drain(left)
                self._error(error)
            except ConnectionError:
                self.close_connection = True
            except OSError as error:  # not an OpError: a storage_ops gap, said in words
                self._drain(left)
                self._send(500, {"error": "os", "message": str(error), "received": 0})
            finally:
                last_request[0] = time.monotonic()

        def _drain(self, left: list[int]) -> None:
            while left[0] > 0:
                data = self.rfile.read(min(BLOCK, left[0]))
                if not data:
                    break
                left[0] -= len(data)

        def _get(self, rel: str, query: dict[str, str], rules: Rules) -> None:
            if "upload" in query:
                lock = one_writer(rel)  # a cut piece's bytes count: wait for its writer
                waited = lock.acquire(timeout=BUSY_SECONDS)
                try:
                    self._send(200, {"received": upload_received(root, rel, rules)})
                finally:
                    if waited:
                        lock.release()
                return
            if "archive" in query:
                self._archive(archive(root, rel, query["archive"], rules))
                return
            kind, found, st = read(root, rel, rules)
            if kind == "dir":
                self._send(200, {"entries": found})
                return
            with os.fdopen(found, "rb") as f:
                size = st.st_size
                self.send_response(200)
                self.send_header("Content-Type", "application/octet-stream")
                self.send_header("Content-Length", str(size))
                self.send_header("X-Mtime", repr(st.st_mtime))
                self.send_header("Connection", "close")
                self.end_headers()
                self.close_connection = True
                left = size  # what it was when asked: a file growing meanwhile is cut there
                while left > 0:
                    data = f.read(min(BLOCK, left))
                    if not data:
                        break
                    self.wfile.write(data)
                    left -= len(data)
                if left:  # it shrank: the client sees a short body and says so
                    return

        def _archive(self, chunks: Iterator[bytes]) -> None:
            first: bytes | None = next(chunks, b"")  # errors before the head: JSON
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.send_header("Connection", "close")
            self.end_headers()
            self.close_connection = True
            pending: list[bytes] = [first] if first else []
            size = len(first or b"")
            try:
                for data in chunks:
                    pending.append(data)
                    size += len(data)
                    if size >= BLOCK:
                        self._chunk(b"".join(pending))
                        pending, size = [], 0
            except (OpError, OSError) as error:
                # Too late for a status: a line that is no chunk size says it to the client.
                self.wfile.write(f"archive failed: {error}\r\n".encode(errors="replace"))
                return
            if pending:
                self._chunk(b"".join(pending))
            self.wfile.write(b"0\r\n\r\n")

        def _chunk(self, data: bytes) -> None:
            self.wfile.write(b"%x\r\n" % len(data) + data + b"\r\n")

        def do_GET(self) -> None:
            self._serve("GET")

        def do_PUT(self) -> None:
            self._serve("PUT")

        def do_POST(self) -> None:
            self._serve("POST")

        def do_PATCH(self) -> None:
            self._serve("PATCH")

        def do_DELETE(self) -> None:
            self._serve("DELETE")

    host = os.environ.get("JUPYTER_PAI_POD_LOOPBACK") or "127.0.0.1"
    server = http.server.ThreadingHTTPServer((host, port), Handler)

    def exit_when_idle() -> None:
        while time.monotonic() - last_request[0] < idle_exit:
            time.sleep(1)
        server.shutdown()

    threading.Thread(target=exit_when_idle, daemon=True).start()
    print("listening", flush=True)
    server.serve_forever()
    print(f"no request for {idle_exit:g} s: exiting", flush=True)


if __name__ == "__main__":
    main()
