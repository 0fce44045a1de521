"""A small web app a test task serves on its declared port (standard library only: on
the test cluster's runner a pod's command runs with the machine's python3).

``GET /`` a page naming the task; ``GET /whoami`` the request as received (JSON: path,
query, headers), so a test sees what the proxy forwarded and dropped; ``POST /echo`` the
body back; ``GET /go`` a redirect to ``/whoami`` (an absolute path); ``/ws`` a WebSocket
that answers each text message with ``echo: <message>``; ``GET /attack`` a hostile page
whose script tries to act as the Jupyter user who opened it (read the cookies, open a
terminal, list files, reach into JupyterLab's page) and writes what it got into
``#result`` as JSON; ``GET /loud`` an answer (gzip-encoded) carrying every header of
:data:`DROPPED_HEADERS`, :data:`PASSED_HEADERS` and :data:`OWN_POLICY`.

Run in a task by :func:`command`, or as a script (``python3 taskweb.py [label]``)."""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import os
import shlex
import struct
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

WS_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

ATTACK = """<!doctype html><html><head><title>hostile page</title></head><body>
<h1>hostile page</h1><pre id="result"></pre>
<script>
(async () => {
  const out = {};
  const base = location.pathname.split("pai/api/")[0];
  let xsrf = "";
  try {
    out.cookie = document.cookie;
    const m = document.cookie.match(/_xsrf=([^;]+)/);
    xsrf = m ? decodeURIComponent(m[1]) : "";
  } catch (e) { out.cookie_error = String(e); }
  async function attempt(name, url, init) {
    try {
      const r = await fetch(url, init);
      out[name] = { status: r.status, body: (await r.text()).slice(0, 200) };
    } catch (e) { out[name] = { error: String(e) }; }
  }
  await attempt("terminal", base + "api/terminals", {
    method: "POST", credentials: "include", headers: { "X-XSRFToken": xsrf } });
  await attempt("contents", base + "api/contents", { credentials: "include" });
  try { out.parent = window.parent.document.title; }
  catch (e) { out.parent_error = String(e); }
  document.getElementById("result").textContent = JSON.stringify(out);
})();
</script></body></html>"""


#: Headers that act on the whole origin, on more than the one answer, or on the servers in
#: front: an app answering through the Jupyter server's proxy gets none of them to the browser.
DROPPED_HEADERS = (
    ("NEL", '{"report_to": "default", "max_age": 31536000, "include_subdomains": true}'),
    ("Report-To", '{"max_age": 31536000, "endpoints": [{"url": "https://r.example/"}]}'),
    ("Reporting-Endpoints", 'default="https://r.example/"'),
    ("Clear-Site-Data", '"*"'),
    ("Strict-Transport-Security", "max-age=31536000; includeSubDomains"),
    ("Alt-Svc", 'h2="r.example:443"; ma=31536000'),
    ("Service-Worker-Allowed", "/"),
    ("Link", '</sw.js>; rel="serviceworker"; scope="/"'),
    ("Refresh", "0; url=https://r.example/"),
    ("Set-Cookie", "planted=1; Path=/"),
    ("Access-Control-Allow-Origin", "*"),
    ("Access-Control-Allow-Credentials", "true"),
    ("Access-Control-Allow-Methods", "*"),
    ("Access-Control-Allow-Headers", "*"),
    ("Access-Control-Expose-Headers", "*"),
    ("Access-Control-Max-Age", "86400"),
    ("Content-Security-Policy-Report-Only", "default-src 'none'; report-uri https://r.example/"),
    ("X-Frame-Options", "DENY"),
    ("Permissions-Policy", "camera=*, microphone=*"),
    ("Feature-Policy", "camera *"),
    ("Document-Policy", "force-load-at-top"),
    ("Origin-Agent-Cluster", "?0"),
    ("Cross-Origin-Opener-Policy", "unsafe-none"),
    ("Cross-Origin-Embedder-Policy", "require-corp"),
    ("Cross-Origin-Resource-Policy", "cross-origin"),
    ("Referrer-Policy", "unsafe-url"),
    ("Timing-Allow-Origin", "*"),
    ("Accept-CH", "Sec-CH-UA-Full-Version-List"),
    ("Critical-CH", "Sec-CH-UA-Full-Version-List"),
    ("Supports-Loading-Mode", "credentialed-prerender"),
    ("Speculation-Rules", '"/rules.json"'),
    ("X-DNS-Prefetch-Control", "on"),
    ("X-Content-Type-Options", "sniff"),
    ("X-Accel-Redirect", "/internal/"),
    ("X-Sendfile", "/etc/passwd"),
    ("Content-Location", "/elsewhere"),
    ("X-Powered-By", "taskweb"),
)
#: Headers about the one answer, which reach the browser as the app sent them.
PASSED_HEADERS = (
    ("Content-Type", "text/plain; charset=utf-8"),
    ("Content-Encoding", "gzip"),
    ("Content-Language", "en"),
    ("Content-Disposition", 'inline; filename="loud.txt"'),
    ("Cache-Control", "private, max-age=60"),
    ("Expires", "Thu, 01 Jan 2037 00:00:00 GMT"),
    ("ETag", '"loud-1"'),
    ("Last-Modified", "Wed, 01 Jan 2025 00:00:00 GMT"),
    ("Vary", "Accept-Encoding"),
    ("Accept-Ranges", "bytes"),
    ("Content-Range", "bytes 0-3/4"),
    ("WWW-Authenticate", 'Basic realm="taskweb"'),
)
#: The app's own policy: the proxy keeps it beside its sandbox, which it cannot loosen.
OWN_POLICY = ("Content-Security-Policy", "sandbox allow-scripts allow-same-origin; img-src 'self'")
LOUD_BODY = b"loud"


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def _send(self, code: int, body: bytes, content_type: str, **headers: str) -> None:
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def do_GET(self) -> None:
        path, _, query = self.path.partition("?")
        if path == "/ws" and self.headers.get("Upgrade", "").lower() == "websocket":
            return self._websocket()
        if path == "/":
            task = os.environ.get("PAI_CURRENT_TASK_ROLE_NAME", "?")
            index = os.environ.get("PAI_CURRENT_TASK_ROLE_CURRENT_TASK_INDEX", "?")
            page = (
                "<!doctype html><html><head><title>task web</title></head><body>"
                f"<h1>Hello from task {task}-{index}</h1>"
                '<p><a href="whoami">whoami</a></p></body></html>'
            )
            return self._send(200, page.encode(), "text/html; charset=utf-8")
        if path == "/attack":
            return self._send(200, ATTACK.encode(), "text/html; charset=utf-8")
        if path == "/whoami":
            seen = {"path": path, "query": query, "headers": dict(self.headers.items())}
            return self._send(200, json.dumps(seen).encode(), "application/json")
        if path == "/loud":
            body = gzip.compress(LOUD_BODY)
            self.send_response(200)
            for name, value in (*DROPPED_HEADERS, *PASSED_HEADERS, OWN_POLICY):
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return None
        if path == "/go":
            return self._send(302, b"", "text/plain", Location="/whoami?from=go")
        self._send(404, b"no such page", "text/plain")

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length)
        self._send(200, b"echo: " + body, "text/plain")

    def _websocket(self) -> None:
        key = self.headers["Sec-WebSocket-Key"]
        accept = base64.b64encode(hashlib.sha1((key + WS_GUID).encode()).digest()).decode()
        self.send_response(101)
        self.send_header("Upgrade", "websocket")
        self.send_header("Connection", "Upgrade")
        self.send_header("Sec-WebSocket-Accept", accept)
        self.end_headers()
        self.wfile.flush()
        while True:
            frame = self._read_frame()
            if frame is None:
                return
            opcode, payload = frame
            if opcode == 8:  # close
                self._write_frame(8, payload[:2])
                return
            if opcode == 1:
                self._write_frame(1, b"echo: " + payload)

    def _read_frame(self) -> tuple[int, bytes] | None:
        head = self.rfile.read(2)
        if len(head) < 2:
            return None
        opcode, length = head[0] & 0x0F, head[1] & 0x7F
        if length == 126:
            (length,) = struct.unpack("!H", self.rfile.read(2))
        elif length == 127:
            (length,) = struct.unpack("!Q", self.rfile.read(8))
        mask = self.rfile.read(4) if head[1] & 0x80 else b"\0\0\0\0"
        data = self.rfile.read(length)
        return opcode, bytes(b ^ mask[i % 4] for i, b in enumerate(data))

    def _write_frame(self, opcode: int, payload: bytes) -> None:
        n = len(payload)
        head = bytes([0x80 | opcode])
        if n < 126:
            head += bytes([n])
        elif n < 65536:
            head += bytes([126]) + struct.pack("!H", n)
        else:
            head += bytes([127]) + struct.pack("!Q", n)
        self.wfile.write(head + payload)
        self.wfile.flush()

    def log_message(self, format: str, *args: object) -> None:
        print(format % args, flush=True)


def serve(label: str = "tensorboard") -> None:
    port = int(os.environ[f"PAI_CONTAINER_HOST_{label}_PORT_LIST"].split(",")[0])
    # Its own addresses only: on the test cluster's runner every pod is a process of this
    # machine with a loopback IP of its own, and other pods may hold the same port number.
    # There the pod's own loopback (where port-forwards connect) is an address apart.
    hosts = [os.environ.get("PAI_CURRENT_CONTAINER_IP") or "0.0.0.0"]
    loopback = os.environ.get("JUPYTER_PAI_POD_LOOPBACK")
    if loopback and loopback not in hosts:
        hosts.append(loopback)
    servers = [ThreadingHTTPServer((host, port), Handler) for host in hosts]
    for server in servers[1:]:
        threading.Thread(target=server.serve_forever, daemon=True).start()
    print(f"serving on port {port}", flush=True)
    servers[0].serve_forever()


def command(python: str = "python3", label: str = "tensorboard") -> str:
    """A shell command that runs this app in a task, its source inline (no checkout
    needed where the task runs)."""
    source = Path(__file__).read_text()
    encoded = base64.b64encode(source.encode()).decode()
    code = f"import base64; exec(base64.b64decode('{encoded}'))"  # runs the __main__ block
    return f"{shlex.quote(python)} -c {shlex.quote(code)} {shlex.quote(label)}"


if __name__ == "__main__":
    serve(*sys.argv[1:])
