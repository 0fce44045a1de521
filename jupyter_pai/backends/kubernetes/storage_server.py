"""The storage helper pod's server (:mod:`.storage`): listings and files of the mounted
claim, over HTTP, to requests carrying the pod's token. Shipped as source in the pod's
command, so it imports only the standard library (any image with python3 runs it).

argv: root, port, largest file, seconds without a request after which it exits; env:
PAI_HELPER_TOKEN. It listens on the pod's own loopback (port-forward connects there inside
the pod's network namespace): 127.0.0.1, or where the pod has no namespace of its own (the
test cluster's pod runner) the address ``JUPYTER_PAI_POD_LOOPBACK`` gives it, never a
shared 127.0.0.1. The owner deletes an idle pod itself; exiting when nobody asks for
longer covers an owner that was killed and never comes back (the pod ends and frees its
resources; the user's next backend start deletes it)."""

from __future__ import annotations

import http.server
import json
import os
import stat
import sys
import threading
import time
import urllib.parse
from typing import Any


def inside(root: str, p: str) -> bool:
    return p == root or p.startswith(root + os.sep)


def answer(root: str, rel: str, limit: int) -> tuple[dict[str, Any], bytes | None]:
    """A listing or an error as JSON, or a file's bytes; paths resolved inside ``root``."""
    target = os.path.realpath(os.path.join(root, rel))
    if not inside(root, target):
        return {"error": "outside"}, None
    if not os.path.exists(target):
        return {"error": "missing"}, None
    st = os.stat(target)
    if not stat.S_ISDIR(st.st_mode):
        if st.st_size > limit:
            return {"error": "large", "size": st.st_size}, None
        with open(target, "rb") as f:
            return {}, f.read()
    entries = []
    for name in sorted(os.listdir(target)):
        full = os.path.join(target, name)
        if not inside(root, os.path.realpath(full)):
            continue
        try:
            s = os.stat(full)
        except OSError:
            continue
        entries.append(
            {
                "name": name,
                "path": os.path.relpath(full, root),
                "dir": stat.S_ISDIR(s.st_mode),
                "size": s.st_size,
                "mtime": s.st_mtime,
            }
        )
    return {"entries": entries}, None


def main() -> None:
    root = os.path.realpath(sys.argv[1])
    port, limit, idle_exit = int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
    token = os.environ["PAI_HELPER_TOKEN"]
    last_request = [time.monotonic()]

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            last_request[0] = time.monotonic()
            query = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query)
            if self.headers.get("X-Token") != token:
                doc: dict[str, Any] = {"error": "token"}
                data = None
            else:
                doc, data = answer(root, query.get("path", ["."])[0], limit)
            body = data if data is not None else json.dumps(doc).encode()
            kind = "application/octet-stream" if data is not None else "application/json"
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

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
