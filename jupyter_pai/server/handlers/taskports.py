"""``jobs/{id}/tasks/{task}/ports/{port}/…``: a running task's web port (TensorBoard, a
web UI) in a JupyterLab tab, HTTP and WebSocket proxied through this server.

The backend checks the request (the user's own job, a running task, a port it declared)
and says where the port is reachable: on this machine locally, through a port-forward on
Kubernetes. The task never sees the user's Jupyter credentials: the cookie,
``Authorization`` and the ``token`` argument are dropped on the way. Mutating requests
must carry Jupyter's XSRF token or come from this server's own origin (a proxied page
posting to itself), so another site cannot drive the task's app with the user's cookie."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any
from urllib.parse import urlencode, urlparse

from jupyter_server.base.handlers import JupyterHandler
from jupyter_server.utils import url_path_join
from tornado import httpclient, httputil, web, websocket

from ...backends.taskports import PortAddress
from ...errors import PAIError
from .base import PAIHandler

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
CREDENTIALS = frozenset({"cookie", "authorization", "x-xsrftoken", "x-csrftoken"})
WS_HANDSHAKE = frozenset({"sec-websocket-key", "sec-websocket-version", "sec-websocket-extensions"})
TIMEOUT = 300.0


class BadGateway(PAIError):
    status = 502


class TaskPortRedirectHandler(PAIHandler):
    """The bare port URL: on to ``…/`` so the app's relative links resolve under it."""

    @web.authenticated
    async def get(self, job_id: str, task: str, port: str) -> None:
        backend = await self.backend()
        await backend.task_port(job_id, task, port)  # 4xx here, not after the redirect
        query = f"?{self.request.query}" if self.request.query else ""
        self.redirect(self.request.path + "/" + query)


class TaskPortHandler(PAIHandler, websocket.WebSocketHandler):
    """HTTP requests are forwarded as they come (body streamed back); a WebSocket
    upgrade opens a WebSocket to the task and relays messages both ways."""

    _upstream: websocket.WebSocketClientConnection | None = None
    # What a task's web app is sent is its own business (uploads): no API-sized limit.
    max_body_bytes = None

    @property
    def content_security_policy(self) -> str:
        # The proxied app's pages run scripts and styles: JupyterLab's page policy, not
        # the API's ``default-src 'none'``.
        policy: str = JupyterHandler.content_security_policy.fget(self)  # type: ignore[attr-defined]
        return policy

    def check_xsrf_cookie(self) -> None:
        try:
            super().check_xsrf_cookie()
        except web.HTTPError:
            if not self._same_origin():
                raise

    def _same_origin(self) -> bool:
        if self.request.headers.get("Sec-Fetch-Site") == "same-origin":
            return True
        origin = self.request.headers.get("Origin")
        return origin is not None and urlparse(origin).netloc == self.request.host

    def _base(self, job_id: str, task: str, port: str) -> str:
        return url_path_join(
            self.base_url, "pai/api/jobs", job_id, "tasks", task, "ports", port, "/"
        )

    def _target(self, scheme: str, address: PortAddress, path: str) -> str:
        args = [
            (k, v.decode(errors="replace"))
            for k, values in self.request.query_arguments.items()
            if k != "token"
            for v in values
        ]
        query = f"?{urlencode(args)}" if args else ""
        return f"{scheme}://{address.host}:{address.port}/{path}{query}"

    def _forwarded_headers(
        self, address: PortAddress, drop: frozenset[str]
    ) -> httputil.HTTPHeaders:
        headers = httputil.HTTPHeaders()
        for name, value in self.request.headers.get_all():
            if name.lower() not in HOP_BY_HOP | CREDENTIALS | drop:
                headers.add(name, value)
        headers["Host"] = f"{address.host}:{address.port}"
        headers["X-Forwarded-Host"] = self.request.host
        headers["X-Forwarded-Proto"] = self.request.protocol
        return headers

    async def _address(self, job_id: str, task: str, port: str) -> PortAddress:
        backend = await self.backend()
        return await backend.task_port(job_id, task, port)

    # -- HTTP ----------------------------------------------------------------------------

    @web.authenticated
    async def get(  # type: ignore[override]
        self, job_id: str, task: str, port: str, path: str = ""
    ) -> None:
        if self.request.headers.get("Upgrade", "").lower() == "websocket":
            address = await self._address(job_id, task, port)
            self._ws_target = self._target("ws", address, path)
            self._ws_headers = self._forwarded_headers(address, WS_HANDSHAKE)
            self._ws_where = f"task {task} of job {job_id}, port {port}"
            await websocket.WebSocketHandler.get(self, job_id, task, port, path)
            return
        await self._proxy(job_id, task, port, path)

    @web.authenticated
    async def post(self, job_id: str, task: str, port: str, path: str = "") -> None:
        await self._proxy(job_id, task, port, path)

    @web.authenticated
    async def put(self, job_id: str, task: str, port: str, path: str = "") -> None:
        await self._proxy(job_id, task, port, path)

    @web.authenticated
    async def patch(self, job_id: str, task: str, port: str, path: str = "") -> None:
        await self._proxy(job_id, task, port, path)

    @web.authenticated
    async def delete(self, job_id: str, task: str, port: str, path: str = "") -> None:
        await self._proxy(job_id, task, port, path)

    @web.authenticated
    async def head(self, job_id: str, task: str, port: str, path: str = "") -> None:
        await self._proxy(job_id, task, port, path)

    async def _proxy(self, job_id: str, task: str, port: str, path: str) -> None:
        address = await self._address(job_id, task, port)
        base = self._base(job_id, task, port)
        origin = f"http://{address.host}:{address.port}"
        started = False
        upstream_names: set[str] = set()

        def on_header(line: str) -> None:
            nonlocal started
            line = line.rstrip("\r\n")
            if line.startswith("HTTP/"):
                status = httputil.parse_response_start_line(line)
                self.clear()
                upstream_names.clear()
                self.set_status(status.code, status.reason)
                return
            if line:
                name, _, value = line.partition(":")
                value = value.strip()
                if name.lower() in HOP_BY_HOP or name.lower() == "set-cookie":
                    return
                if name.lower() == "location":
                    value = _rewrite_location(value, origin, base)
                # The app's headers replace this server's defaults; repeated ones add up.
                if name.lower() in upstream_names:
                    self.add_header(name, value)
                else:
                    self.set_header(name, value)
                    upstream_names.add(name.lower())
                return
            started = True

        def on_chunk(chunk: bytes) -> None:
            self.write(chunk)
            self.flush()

        method = self.request.method or "GET"
        request = httpclient.HTTPRequest(
            self._target("http", address, path),
            method=method,
            headers=self._forwarded_headers(address, frozenset()),
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
            await httpclient.AsyncHTTPClient().fetch(request, raise_error=False)
        except (OSError, httpclient.HTTPClientError) as error:
            if started:
                return
            raise BadGateway(
                f"task {task} of job {job_id} does not answer on port {port}: {error}"
            ) from None
        if not started:
            raise BadGateway(f"task {task} of job {job_id} does not answer on port {port}")
        self.finish()

    # -- WebSocket -----------------------------------------------------------------------

    async def open(self, *args: Any, **kwargs: Any) -> None:
        request = httpclient.HTTPRequest(
            self._ws_target, headers=self._ws_headers, connect_timeout=10
        )
        try:
            self._upstream = await websocket.websocket_connect(request)
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


def _rewrite_location(value: str, origin: str, base: str) -> str:
    """A redirect inside the app stays inside the proxy."""
    if value.startswith(origin):
        value = value[len(origin) :] or "/"
    if value.startswith("/") and not value.startswith("//"):
        return base.rstrip("/") + value
    return value
