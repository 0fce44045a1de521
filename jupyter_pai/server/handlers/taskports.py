"""A running task's web port (TensorBoard, a web UI) in a JupyterLab tab, HTTP and
WebSocket proxied through this server.

``jobs/{id}/tasks/{task}/ports/{port}/…`` is where the panel opens a port. The backend
checks it (the user's own job, a running task, a port it declared); then an HTTP request
goes on to a signed link, ``task-ports/{link}/…`` (:mod:`..portlinks`), whose answers
carry a CSP ``sandbox`` without ``allow-same-origin``: the app's pages run in an opaque
origin, so their scripts can neither read Jupyter's cookies nor call its API as the
user, and their own requests are authenticated by the link in their path. WebSockets of
clients that hold the user's credentials (scripts, tests) are relayed on the first path.

The task never sees the user's Jupyter credentials: the cookie, ``Authorization``, the
``token`` argument and a ``Referer`` from outside the app are dropped on the way; of its
answers' headers only those about the answer itself come back (:mod:`..proxyheaders`)."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import weakref
from typing import Any
from urllib.parse import quote, urlencode, urlparse

from jupyter_server.auth.decorator import allow_unauthenticated
from jupyter_server.utils import url_path_join
from tornado import httpclient, httputil, netutil, web, websocket

from ...backends.taskports import PortAddress
from ...errors import Forbidden, PAIError
from .. import proxyheaders
from ..portlinks import PortLink
from ..sandbox import SANDBOX, SCRIPT, SCRIPT_PATH, ScriptInjector
from .base import PAIHandler, authorized

# Headers that belong to one hop, or to this server's own authentication.
HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "content-length",
        "host",
    }
)
#: Characters a path inside the app keeps as they are when it goes on to the link.
PATH_SAFE = "/:@!$&'()*+,;=~-._"
CREDENTIALS = frozenset({"cookie", "authorization", "x-xsrftoken", "x-csrftoken"})
WS_HANDSHAKE = frozenset({"sec-websocket-key", "sec-websocket-version", "sec-websocket-extensions"})
TIMEOUT = 300.0
#: The panel opens ports with the ``execute`` action: a task's web app can run code.
PORT_ACTION = "execute"
LINKS = "task-ports"


class BadGateway(PAIError):
    status = 502


class TaskPortRedirectHandler(PAIHandler):
    """The bare port URL: on to ``…/`` so the app's relative links resolve under it."""

    @web.authenticated
    @authorized(PORT_ACTION)
    async def get(self, job_id: str, task: str, port: str) -> None:
        backend = await self.backend()
        await backend.task_port(job_id, task, port)  # 4xx here, not after the redirect
        query = f"?{self.request.query}" if self.request.query else ""
        self.redirect(self.request.path + "/" + query)


class _ForwardResolver(netutil.Resolver):
    """Names a port-forward's Unix socket as a host (``<path in hex>.forward.invalid``),
    for tornado's HTTP and WebSocket clients; other hosts resolve as usual."""

    SUFFIX = ".forward.invalid"

    def initialize(self) -> None:
        self._default = netutil.DefaultLoopResolver()

    @classmethod
    def host_for(cls, path: str) -> str:
        return path.encode().hex() + cls.SUFFIX

    async def resolve(
        self, host: str, port: int, family: socket.AddressFamily = socket.AF_UNSPEC
    ) -> list[tuple[int, Any]]:
        if host.endswith(self.SUFFIX):
            return [(socket.AF_UNIX, bytes.fromhex(host[: -len(self.SUFFIX)]).decode())]
        found: list[tuple[int, Any]] = await self._default.resolve(host, port, family)
        return found


_RESOLVER = _ForwardResolver()
_CLIENTS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, httpclient.AsyncHTTPClient]
_CLIENTS = weakref.WeakKeyDictionary()


def _client() -> httpclient.AsyncHTTPClient:
    """This loop's client for proxied requests (a page loads many resources at once)."""
    loop = asyncio.get_running_loop()
    client = _CLIENTS.get(loop)
    if client is None:
        client = httpclient.AsyncHTTPClient(force_instance=True, max_clients=64, resolver=_RESOLVER)
        _CLIENTS[loop] = client
    return client


class _PortProxy(PAIHandler, websocket.WebSocketHandler):
    """Forwards a request to a task's port: HTTP answers streamed back, a WebSocket
    upgrade relayed both ways. Subclasses say which port and how requests are checked."""

    _upstream: websocket.WebSocketClientConnection | None = None
    # What a task's web app is sent is its own business (uploads): no API-sized limit.
    max_body_bytes = None

    def _query(self) -> str:
        """The request's query without Jupyter's ``token``, from ``?`` (or empty)."""
        args = [
            (k, v.decode(errors="replace"))
            for k, values in self.request.query_arguments.items()
            if k != "token"
            for v in values
        ]
        return f"?{urlencode(args)}" if args else ""

    def _upstream_url(self, scheme: str, address: PortAddress, path: str) -> str:
        host = address.host if address.socket is None else _RESOLVER.host_for(address.socket)
        return f"{scheme}://{host}:{address.port}/{path}{self._query()}"

    def _app_base(self) -> str:
        """The path under which the app's own pages are served (ends in ``/``)."""
        raise NotImplementedError

    def _forwarded_headers(
        self, address: PortAddress, drop: frozenset[str]
    ) -> httputil.HTTPHeaders:
        headers = httputil.HTTPHeaders()
        for name, value in self.request.headers.get_all():
            if name.lower() not in HOP_BY_HOP | CREDENTIALS | drop | {"referer"}:
                headers.add(name, value)
        # A page of the app as the app would name it; a referrer from elsewhere (a Jupyter
        # page, with its ?token=) is not the app's business.
        referer = _app_referer(self.request.headers.get("Referer"), self._app_base(), address)
        if referer is not None:
            headers["Referer"] = referer
        headers["Host"] = f"{address.host}:{address.port}"
        headers["X-Forwarded-Host"] = self.request.host
        headers["X-Forwarded-Proto"] = self.request.protocol
        return headers

    async def _start_websocket(self, address: PortAddress, path: str, *args: str) -> None:
        self._ws_target = self._upstream_url("ws", address, path)
        self._ws_headers = self._forwarded_headers(address, WS_HANDSHAKE)
        self._ws_where = self._where(args[0], args[1], args[2])
        await websocket.WebSocketHandler.get(self, *args)

    def _finish_as_is(self, chunk: bytes | None = None) -> None:
        """Finish without the API's JSON ``Content-Type``: the answer is the app's own."""
        self.update_api_activity()
        web.RequestHandler.finish(self, chunk)

    @staticmethod
    def _where(job_id: str, task: str, port: str) -> str:
        return f"task {task} of job {job_id}, port {port}"

    @staticmethod
    def _silent(job_id: str, task: str, port: str) -> str:
        return f"task {task} of job {job_id} does not answer on port {port}"

    async def _proxy(
        self,
        job_id: str,
        task: str,
        port: str,
        address: PortAddress,
        path: str,
        first_script: str | None = None,
    ) -> None:
        """``first_script``: a script every HTML page of the app loads before its own."""
        base = self._app_base()
        origin = f"http://{address.host}:{address.port}"
        method = self.request.method or "GET"
        started = False
        upstream: dict[str, str] = {}  # the app's headers so far, by lower-case name
        status_code = 0
        injector: ScriptInjector | None = None

        def on_header(line: str) -> None:
            nonlocal started, status_code, injector
            line = line.rstrip("\r\n")
            if line.startswith("HTTP/"):
                status = httputil.parse_response_start_line(line)
                self.clear()
                upstream.clear()
                self.set_status(status.code, status.reason)
                status_code = status.code
                return
            if line:
                name, _, value = line.partition(":")
                value, lower = value.strip(), name.lower()
                if lower in HOP_BY_HOP or not proxyheaders.passed(lower):
                    return
                if lower == "location":
                    value = _rewrite_location(value, origin, base)
                # The app's headers replace this server's defaults; repeated ones add up.
                if lower in upstream or lower in proxyheaders.ADDED:
                    self.add_header(name, value)
                else:
                    self.set_header(name, value)
                upstream[lower] = value
                return
            started = True
            if first_script is not None and method == "GET" and status_code == 200:
                kind = upstream.get("content-type", "").lower()
                encoded = upstream.get("content-encoding", "identity").lower()
                if kind.startswith("text/html") and encoded == "identity":
                    injector = ScriptInjector(first_script)

        def on_chunk(chunk: bytes) -> None:
            if injector is not None:
                chunk = injector.feed(chunk)
            if chunk:
                self.write(chunk)
                self.flush()

        headers = self._forwarded_headers(address, frozenset())
        if first_script is not None and "text/html" in headers.get("Accept", ""):
            headers["Accept-Encoding"] = "identity"  # a page is read as written, to add to it
        request = httpclient.HTTPRequest(
            self._upstream_url("http", address, path),
            method=method,
            headers=headers,
            body=self.request.body if method in ("POST", "PUT", "PATCH", "DELETE") else None,
            follow_redirects=False,
            decompress_response=False,
            allow_nonstandard_methods=True,
            header_callback=on_header,
            streaming_callback=on_chunk,
            connect_timeout=10,
            request_timeout=TIMEOUT,
        )
        try:
            await _client().fetch(request, raise_error=False)
        except (OSError, httpclient.HTTPClientError) as error:
            if started:
                return
            raise BadGateway(f"{self._silent(job_id, task, port)}: {error}") from None
        if not started:
            raise BadGateway(self._silent(job_id, task, port))
        self._finish_as_is(injector.finish() if injector is not None else None)

    # -- WebSocket -----------------------------------------------------------------------

    async def open(self, *args: Any, **kwargs: Any) -> None:
        request = httpclient.HTTPRequest(
            self._ws_target, headers=self._ws_headers, connect_timeout=10
        )
        try:
            self._upstream = await websocket.websocket_connect(request, resolver=_RESOLVER)
        except (OSError, httpclient.HTTPClientError) as error:
            self.log.info("jupyter-pai: WebSocket to %s failed: %s", self._ws_where, error)
            self.close(1011, f"{self._ws_where} refused the WebSocket")
            return
        self._relay_task = asyncio.ensure_future(self._relay())

    async def _relay(self) -> None:
        assert self._upstream is not None
        while True:
            message = await self._upstream.read_message()
            if message is None:
                self.close()
                return
            with contextlib.suppress(websocket.WebSocketClosedError):
                await self.write_message(message, binary=isinstance(message, bytes))

    async def on_message(self, message: str | bytes) -> None:
        if self._upstream is not None:
            with contextlib.suppress(websocket.WebSocketClosedError):
                await self._upstream.write_message(message, binary=isinstance(message, bytes))

    def on_close(self) -> None:
        if self._upstream is not None:
            self._upstream.close()
            self._upstream = None


def _is_websocket(handler: web.RequestHandler) -> bool:
    return handler.request.headers.get("Upgrade", "").lower() == "websocket"


class TaskPortHandler(_PortProxy):
    """The port as the panel opens it, with the user's Jupyter credentials: an HTTP
    request goes on (307, method and body kept) to the port's signed link, a WebSocket is
    relayed here (a browser page's WebSockets come from the link's path instead)."""

    def _app_base(self) -> str:
        job_id, task, port = (self.path_kwargs[k] for k in ("job_id", "task", "port"))
        return url_path_join(
            self.base_url, "pai/api/jobs", job_id, "tasks", task, "ports", port, "/"
        )

    async def _to_link(self, job_id: str, task: str, port: str, path: str) -> None:
        backend = await self.backend()
        await backend.task_port(job_id, task, port)  # 4xx here, not after the redirect
        link = self.pai.port_links.make(backend.user, job_id, task, port)
        self.set_header("Cache-Control", "no-store")
        self.set_header("Referrer-Policy", "no-referrer")
        where = _link_base(self.base_url, link) + quote(path, safe=PATH_SAFE)
        self.redirect(where + self._query(), status=307)

    @web.authenticated
    @authorized(PORT_ACTION)
    async def get(  # type: ignore[override]
        self, job_id: str, task: str, port: str, path: str = ""
    ) -> None:
        if _is_websocket(self):
            backend = await self.backend()
            address = await backend.task_port(job_id, task, port)
            await self._start_websocket(address, path, job_id, task, port, path)
            return
        await self._to_link(job_id, task, port, path)

    @web.authenticated
    @authorized(PORT_ACTION)
    async def post(self, job_id: str, task: str, port: str, path: str = "") -> None:
        await self._to_link(job_id, task, port, path)

    put = patch = delete = head = post


class TaskPortLinkHandler(_PortProxy):
    """A port through its signed link: no Jupyter credentials here (the link is the
    credential, and a sandboxed page has no cookie to send); answers sandboxed."""

    _link: PortLink | None = None

    @property
    def content_security_policy(self) -> str:
        return SANDBOX

    def set_default_headers(self) -> None:
        super().set_default_headers()
        # The app's pages run in an opaque origin: their own fetches arrive as
        # ``Origin: null``, and are answered as the same app's.
        if self.request.headers.get("Origin") == "null":
            self.set_header("Access-Control-Allow-Origin", "null")
            self.set_header("Access-Control-Allow-Credentials", "true")
            self.set_header("Vary", "Origin")
        self.set_header("Referrer-Policy", "no-referrer")

    def check_origin(self, origin_to_satisfy_tornado: str = "") -> bool:
        return True  # the link authenticates; there is no ambient credential to abuse

    def check_xsrf_cookie(self) -> None:
        return None  # nothing here acts on a cookie

    async def prepare(self) -> None:  # type: ignore[override]
        # The link is a credential: it never reaches the server's request log.
        link = self.path_kwargs.get("link") or ""
        self._raw_path = self.request.path
        if link:
            self.request.path = self.request.path.replace(link, "…", 1)
            self.request.uri = self.request.uri.replace(link, "…", 1)
        await super().prepare()
        self._link = self.pai.port_links.check(link)

    def _app_base(self) -> str:
        return _link_base(self.base_url, self.path_kwargs.get("link") or "")

    async def _address(self) -> tuple[PortLink, PortAddress]:
        assert self._link is not None
        backend = await self.backend()
        link = self._link
        if link.user != backend.user:
            raise Forbidden(f"this link opens a port of {link.user}'s job, not yours")
        return link, await backend.task_port(link.job_id, link.task, link.port)

    async def _forward(self) -> None:
        link, address = await self._address()
        path = _raw_tail(self._raw_path, self._app_base())
        if _is_websocket(self):
            await self._start_websocket(address, path, link.job_id, link.task, link.port)
            return
        if path == SCRIPT_PATH:
            self.set_header("Content-Type", "text/javascript; charset=utf-8")
            self._finish_as_is(SCRIPT)
            return
        first = self._app_base() + SCRIPT_PATH
        await self._proxy(link.job_id, link.task, link.port, address, path, first)

    @allow_unauthenticated
    async def get(self, link: str, path: str = "") -> None:
        await self._forward()

    post = put = patch = delete = head = get

    @allow_unauthenticated
    async def options(self, link: str, path: str = "") -> None:  # type: ignore[override]
        wanted = self.request.headers.get("Access-Control-Request-Method")
        if wanted is None or self.request.headers.get("Origin") is None:
            await self._forward()
            return
        await self._address()  # a preflight for a port that is open now
        self.set_header("Access-Control-Allow-Methods", wanted)
        asked = self.request.headers.get("Access-Control-Request-Headers")
        if asked:
            self.set_header("Access-Control-Allow-Headers", asked)
        self.set_header("Access-Control-Max-Age", "600")
        self.set_status(204)
        self.finish()


def _link_base(base_url: str, link: str) -> str:
    return url_path_join(base_url, "pai/api", LINKS, link, "/")


def _raw_tail(raw_path: str, base: str) -> str:
    """The request's path inside the app, as the browser wrote it (still %-encoded)."""
    return raw_path[len(base) :] if raw_path.startswith(base) else ""


def _app_referer(referer: str | None, base: str, address: PortAddress) -> str | None:
    """A referrer inside the app, as the app would name it; None for any other."""
    if not referer:
        return None
    parsed = urlparse(referer)
    if not parsed.path.startswith(base):
        return None
    tail = parsed.path[len(base) :]
    query = f"?{parsed.query}" if parsed.query else ""
    return f"http://{address.host}:{address.port}/{tail}{query}"


def _rewrite_location(value: str, origin: str, base: str) -> str:
    """A redirect inside the app stays inside the proxy."""
    if value.startswith(origin):
        value = value[len(origin) :] or "/"
    if value.startswith("/") and not value.startswith("//"):
        return base.rstrip("/") + value
    return value
