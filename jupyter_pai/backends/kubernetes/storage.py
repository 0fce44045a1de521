"""Browsing a claim this server has not mounted: a helper pod mounts it read-only and
serves listings and files over HTTP, reached through the API server's port-forward
(exec needs a container runtime; port-forward is what every cluster, the test cluster
included, offers). One pod per claim answers the requests in a row and is deleted after
``idle`` seconds without one, and when the backend closes.

The path is checked here first (no ``..``, no absolute path) and again inside the pod
against the resolved storage root, so a symbolic link cannot lead out of it. The pod
listens on loopback only (where port-forward connects; no other pod reaches it) and
answers only requests carrying its random token.

Each pod carries its user (label) and its owning process (:mod:`.owner`): a backend
starting after a killed server deletes that server's pods (:meth:`HelperPods.sweep`),
never another user's or those of a process that still runs."""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any
from urllib.parse import quote

import aiohttp
from kubernetes_asyncio.stream import WsApiClient

from ...errors import FieldError, Forbidden, NotFound, Unavailable
from ..base import FileContent
from ..models import StorageEntry, StorageListing
from ..storage_fs import clean_relative
from .naming import ANN_USER, LABEL_USER, label_value, slug
from .owner import ANN_OWNER, ProcessOwner
from .pods import PodOptions
from .portforward import open_stream
from .resources import POD
from .rest import ApiError, Rest, path

HELPER_LABEL = "jupyter-pai.io/storage-helper"
MAX_FILE = 16 * 1024 * 1024
MOUNT = "/storage"
PORT = 8470

#: The pod's server, sent as source (the helper image needs only python3).
SERVER = (Path(__file__).parent / "storage_server.py").read_text()


@dataclass
class _Helper:
    name: str
    token: str
    ready: asyncio.Event = field(default_factory=asyncio.Event)
    failed: BaseException | None = None
    busy: int = 0
    last_used: float = field(default_factory=time.monotonic)
    reaper: asyncio.Task[None] | None = None


class HelperPods:
    def __init__(
        self,
        rest: Rest,
        namespace: str,
        user: str,
        image: str,
        options: PodOptions,
        *,
        idle: float = 60.0,
        start_timeout: float = 60.0,
        owner: ProcessOwner | None = None,
        exit_after: float | None = None,
    ) -> None:
        """``exit_after``: seconds without a request after which the pod's server exits
        by itself (default ``idle`` + 60: this process deletes it sooner, if it lives)."""
        self.rest = rest
        self.namespace = namespace
        self.user = user
        self.owner = owner or ProcessOwner.this()
        self.image = image
        self.options = options
        self.idle = idle
        self.exit_after = idle + 60.0 if exit_after is None else exit_after
        self.start_timeout = start_timeout
        self.helpers: dict[str, _Helper] = {}
        self._ws: WsApiClient | None = None

    def manifest(self, claim: str, token: str) -> dict[str, Any]:
        spec: dict[str, Any] = {
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 0,
            "automountServiceAccountToken": False,
            "enableServiceLinks": False,
            "containers": [
                {
                    "name": "main",
                    "image": self.image,
                    "command": ["python3", "-c", SERVER.replace("$", "$$")],
                    "args": [MOUNT, str(PORT), str(MAX_FILE), f"{self.exit_after:g}"],
                    "env": [{"name": "PAI_HELPER_TOKEN", "value": token}],
                    "ports": [{"containerPort": PORT, "name": "browse"}],
                    "volumeMounts": [{"name": "storage", "mountPath": MOUNT, "readOnly": True}],
                    "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}},
                }
            ],
            "volumes": [
                {"name": "storage", "persistentVolumeClaim": {"claimName": claim, "readOnly": True}}
            ],
        }
        if self.options.node_selector:
            spec["nodeSelector"] = dict(self.options.node_selector)
        if self.options.tolerations:
            spec["tolerations"] = list(self.options.tolerations)
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": f"pai-browse-{slug(claim, 30)}-{secrets.token_hex(4)}",
                "namespace": self.namespace,
                "labels": {HELPER_LABEL: "true", LABEL_USER: label_value(self.user)},
                "annotations": {ANN_USER: self.user, ANN_OWNER: self.owner.encode()},
            },
            "spec": spec,
        }

    # -- the pod's life ----------------------------------------------------------------------

    async def _helper(self, claim: str) -> _Helper:
        helper = self.helpers.get(claim)
        if helper is None:
            helper = _Helper(name="", token=secrets.token_urlsafe(24))
            self.helpers[claim] = helper
            helper.busy += 1
            try:
                await self._start(claim, helper)
            except BaseException as error:
                helper.failed = error
                self.helpers.pop(claim, None)
                raise
            finally:
                helper.ready.set()
            return helper
        helper.busy += 1
        await helper.ready.wait()
        if helper.failed is not None:
            helper.busy -= 1
            raise Unavailable(f"the storage helper pod did not start: {helper.failed}")
        return helper

    async def _start(self, claim: str, helper: _Helper) -> None:
        body = self.manifest(claim, helper.token)
        helper.name = body["metadata"]["name"]
        try:
            await self.rest.create(POD, self.namespace, body)
        except ApiError as error:
            raise Unavailable(f"cannot start the storage helper pod: {error.message}") from None
        deadline = time.monotonic() + self.start_timeout
        url = path(POD, self.namespace, helper.name)
        try:
            while True:
                status = (await self.rest.get(url)).get("status") or {}
                if status.get("phase") == "Running" and await self._listening(url):
                    return
                if status.get("phase") in ("Succeeded", "Failed"):
                    raise Unavailable("the storage helper pod exited")
                waiting = [
                    (s.get("state") or {}).get("waiting") or {}
                    for s in status.get("containerStatuses") or []
                ]
                if any(w.get("reason") == "CreateContainerConfigError" for w in waiting):
                    message = next(w.get("message", "") for w in waiting if w)
                    raise Unavailable(f"the storage helper pod cannot start: {message}")
                if time.monotonic() > deadline:
                    raise Unavailable(
                        f"the storage helper pod is not running after {self.start_timeout:.0f}s"
                    )
                await asyncio.sleep(0.2)
        except BaseException:
            await self._delete(helper.name)
            raise

    async def _listening(self, url: str) -> bool:
        """Whether the server is bound (it says so in its log): a port-forward to a port
        nobody listens on is closed at once, differently by each runtime."""
        try:
            resp = await self.rest.open("GET", url + "/log", query={"container": "main"})
        except ApiError:
            return False
        text = await resp.text()
        resp.release()
        return "listening" in text

    def _release(self, claim: str, helper: _Helper) -> None:
        helper.busy -= 1
        helper.last_used = time.monotonic()
        if helper.reaper is None or helper.reaper.done():
            helper.reaper = asyncio.create_task(self._reap(claim, helper))

    async def _reap(self, claim: str, helper: _Helper) -> None:
        """Deletes the pod once no request used it for `idle` seconds."""
        while True:
            wait = helper.last_used + self.idle - time.monotonic()
            if wait <= 0 and helper.busy == 0:
                break
            await asyncio.sleep(max(wait, 0.1))
        if self.helpers.get(claim) is helper:
            del self.helpers[claim]
        await self._delete(helper.name)

    async def _delete(self, name: str) -> None:
        with contextlib.suppress(Exception):
            await self.rest.delete(POD, self.namespace, name, gracePeriodSeconds=0)

    async def sweep(self) -> list[str]:
        """Deletes this user's helper pods that no process serves: those whose owner is
        gone (a killed server's) and those that ended. Returns their names."""
        selector = f"{HELPER_LABEL}=true,{LABEL_USER}={label_value(self.user)}"
        found = await self.rest.get(path(POD, self.namespace), labelSelector=selector)
        ours = {helper.name for helper in self.helpers.values()}
        swept = []
        for pod in found.get("items") or []:
            meta = pod["metadata"]
            annotations = meta.get("annotations") or {}
            if annotations.get(ANN_USER) != self.user or meta["name"] in ours:
                continue  # another user whose name has the same label value; or in use here
            owner = ProcessOwner.decode(annotations.get(ANN_OWNER))
            ended = (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")
            if ended or (owner is not None and owner.gone(self.owner)):
                await self._delete(meta["name"])
                swept.append(meta["name"])
        return swept

    async def close(self) -> None:
        """Deletes every helper pod (the backend is closing)."""
        helpers, self.helpers = list(self.helpers.values()), {}
        for helper in helpers:
            if helper.reaper is not None:
                helper.reaper.cancel()
            if helper.name:
                await self._delete(helper.name)
        if self._ws is not None:
            await self._ws.close()
            self._ws = None

    # -- requests ----------------------------------------------------------------------------

    async def read(self, claim: str, path_: str) -> StorageListing | FileContent:
        rel = str(clean_relative(path_))
        for attempt in (1, 2):
            helper = await self._helper(claim)
            try:
                doc, data = await self._ask(helper, rel)
            except Unavailable:
                # The pod may be gone (deleted behind our back): a new one, once.
                if self.helpers.get(claim) is helper:
                    del self.helpers[claim]
                    await self._delete(helper.name)
                if attempt == 2:
                    raise
                continue
            finally:
                self._release(claim, helper)
            return self._answer(claim, rel, doc, data)
        raise AssertionError("unreachable")

    async def _ask(
        self, helper: _Helper, rel: str, timeout: float = 30
    ) -> tuple[dict[str, Any], bytes | None]:
        """One HTTP request through a port-forward; the server may not listen yet just
        after the pod turned Running, so refused connections are retried a while."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                return await asyncio.wait_for(self._http(helper, rel), timeout)
            except ConnectionRefusedError as error:
                if time.monotonic() > deadline:
                    raise Unavailable(f"the storage helper pod does not answer: {error}") from None
                await asyncio.sleep(0.2)
            except (aiohttp.ClientError, OSError, asyncio.TimeoutError, ValueError) as error:
                raise Unavailable(
                    f"the storage helper pod does not answer: {str(error) or type(error).__name__}"
                ) from None

    async def _http(self, helper: _Helper, rel: str) -> tuple[dict[str, Any], bytes | None]:
        if self._ws is None:
            self._ws = WsApiClient(configuration=self.rest.api.configuration)
        self.rest.requests += 1
        connect = await open_stream(self._ws, self.namespace, helper.name, PORT)
        request = (
            f"GET /?path={quote(rel)} HTTP/1.1\r\nHost: helper\r\n"
            f"X-Token: {helper.token}\r\nConnection: close\r\n\r\n"
        ).encode()
        try:
            async with connect as ws:
                # v4.channel.k8s.io: channel 0 carries the port's data, 1 its errors; the
                # first frame on each channel is the port number (2 bytes).
                await ws.send_bytes(b"\x00" + request)
                return await self._response(ws)
        except aiohttp.WSServerHandshakeError as error:
            raise Unavailable(f"port-forward refused: {error.status} {error.message}") from None

    @staticmethod
    async def _response(ws: aiohttp.ClientWebSocketResponse) -> tuple[dict[str, Any], bytes | None]:
        seen: set[int] = set()
        buffer = b""
        length: int | None = None
        head: bytes = b""
        async for msg in ws:
            if msg.type != aiohttp.WSMsgType.BINARY or not msg.data:
                continue
            channel, payload = msg.data[0], msg.data[1:]
            if channel not in seen:
                seen.add(channel)
                payload = payload[2:]
            if channel == 1 and payload:
                text = payload.decode(errors="replace")
                if "refused" in text:
                    raise ConnectionRefusedError(text)
                raise ValueError(f"port-forward error: {text}")
            if channel != 0:
                continue
            buffer += payload
            if length is None and b"\r\n\r\n" in buffer:
                head, buffer = buffer.split(b"\r\n\r\n", 1)
                headers = dict(
                    line.split(": ", 1)
                    for line in head.decode("latin-1").split("\r\n")[1:]
                    if ": " in line
                )
                length = int({k.lower(): v for k, v in headers.items()}["content-length"])
            # The forwarded stream is not closed after the reply: the length ends it.
            if length is not None and len(buffer) >= length:
                body = buffer[:length]
                if b"application/octet-stream" in head:
                    return {}, body
                doc: dict[str, Any] = json.loads(body)
                return doc, None
        raise ValueError("the port-forward closed before the whole answer came")

    @staticmethod
    def _answer(
        claim: str, rel: str, doc: dict[str, Any], data: bytes | None
    ) -> StorageListing | FileContent:
        error = doc.get("error")
        shown = "" if rel == "." else rel
        if error == "outside":
            raise Forbidden(
                f"path {rel!r} leads outside the storage (through a symbolic link)",
                [FieldError("path", "a symbolic link points outside the storage")],
            )
        if error == "missing":
            raise NotFound(f"storage {claim}: no file or folder {shown!r}")
        if error == "large":
            raise Forbidden(
                f"{shown} is {doc.get('size')} bytes; the helper reads files up to {MAX_FILE}"
            )
        if error:
            raise Unavailable(f"the storage helper pod refused: {error}")
        if "entries" in doc:
            return StorageListing(
                storage=claim,
                path=shown,
                entries=[
                    StorageEntry(
                        name=e["name"],
                        path=e["path"],
                        type="directory" if e["dir"] else "file",
                        size=None if e["dir"] else e["size"],
                        modified=datetime.fromtimestamp(e["mtime"], timezone.utc),
                    )
                    for e in doc["entries"]
                ],
            )
        content = data or b""

        async def chunks() -> AsyncIterator[bytes]:
            yield content

        return FileContent(name=rel.rsplit("/", 1)[-1], size=len(content), chunks=chunks())
