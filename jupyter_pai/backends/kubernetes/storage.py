"""A claim this server has not mounted: a helper pod mounts it (read-write unless the
storage is read-only) and serves listings, files, uploads and the other writes over HTTP,
reached through the API server's port-forward (exec needs a container runtime;
port-forward is what every cluster, the test cluster included, offers;
:mod:`.helper_http` streams both ways). One pod per claim answers the requests and is
deleted after ``idle`` seconds without one, and when the backend closes. The pod runs in
the user's namespace, created with the user's credentials: it writes with the rights any
pod of the user has on the claim, no more.

The path is checked here first (no ``..``, no absolute path) and again inside the pod by
:mod:`..storage_ops` against the resolved storage root, so a symbolic link cannot lead out
of it. The pod listens on loopback only (where port-forward connects; no other pod reaches
it) and answers only requests carrying its random token.

Each pod carries its user (label) and its owning process (:mod:`.owner`): a backend
starting after a killed server deletes that server's pods (:meth:`HelperPods.sweep`),
never another user's or those of a process that still runs."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import re
import secrets
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import aiohttp

from ...errors import Conflict, FieldError, Unavailable
from ..base import FileContent
from ..models import StorageListing
from ..storage_fs import clean_relative
from ..storage_writes import entry_model, raise_op_error
from .helper_http import Answer, PortRefused, exchange
from .kubeclient import WsApiClient
from .naming import ANN_USER, LABEL_USER, label_value, slug
from .owner import ANN_OWNER, ProcessOwner
from .pods import PodOptions
from .portforward import open_stream
from .resources import POD
from .rest import ApiError, Rest, path

HELPER_LABEL = "jupyter-pai.io/storage-helper"
MOUNT = "/storage"
PORT = 8470

_FUTURE = "from __future__ import annotations\n"
#: The modules the pod runs, in order, each with how many imports of the others it has
#: (parenthesized and marked ``# SHIPPED``): those are taken out, the names being defined
#: above in the one script.
_SHIPPED = (
    ("storage_walk.py", 0),
    ("storage_archive.py", 1),
    ("storage_ops.py", 2),
    ("kubernetes/storage_server.py", 1),
)
_IMPORT = re.compile(r"^from [\w.]+ import \(  # SHIPPED\b.*?^\)\n", re.S | re.M)


def shipped_server() -> str:
    """The pod's server as one script (the helper image needs only python3): the source
    of :mod:`..storage_walk`, :mod:`..storage_archive` and :mod:`..storage_ops`, then the
    server's, without their imports of one another."""
    backends = Path(__file__).parents[1]
    sources = []
    for name, imports in _SHIPPED:
        text, found = _IMPORT.subn("", (backends / name).read_text())
        if found != imports:
            raise RuntimeError(f"{name}: {found} shipped imports where {imports} are expected")
        sources.append(text)
    return _FUTURE + "\n\n".join(sources).replace(_FUTURE, "")


@dataclass
class _Helper:
    name: str
    token: str
    read_only: bool = True
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
        self._retired: list[_Helper] = []
        self._ws: WsApiClient | None = None

    def manifest(self, claim: str, token: str, read_only: bool = True) -> dict[str, Any]:
        spec: dict[str, Any] = {
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 0,
            "automountServiceAccountToken": False,
            "enableServiceLinks": False,
            "containers": [
                {
                    "name": "main",
                    "image": self.image,
                    # `$(VAR)` in a command is expanded by the kubelet: `$$` keeps a `$`.
                    "command": ["python3", "-c", shipped_server().replace("$", "$$")],
                    "args": [MOUNT, str(PORT), f"{self.exit_after:g}"],
                    "env": [{"name": "PAI_HELPER_TOKEN", "value": token}],
                    "ports": [{"containerPort": PORT, "name": "browse"}],
                    "volumeMounts": [
                        {"name": "storage", "mountPath": MOUNT, "readOnly": read_only}
                    ],
                    "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}},
                }
            ],
            "volumes": [
                {
                    "name": "storage",
                    "persistentVolumeClaim": {"claimName": claim, "readOnly": read_only},
                }
            ],
        }
        if self.options.node_selector:
            spec["nodeSelector"] = dict(self.options.node_selector)
        if self.options.tolerations:
            spec["tolerations"] = list(self.options.tolerations)
        self.options.security.apply(spec)
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

    async def _helper(self, claim: str, read_only: bool) -> _Helper:
        helper = self.helpers.get(claim)
        if helper is not None and helper.read_only != read_only:
            # Mounted the other way (the claim's access changed): a new pod; the old one
            # goes once idle, or when the backend closes.
            del self.helpers[claim]
            self._retired.append(helper)
            helper = None
        if helper is None:
            helper = _Helper(name="", token=secrets.token_urlsafe(24), read_only=read_only)
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
        body = self.manifest(claim, helper.token, helper.read_only)
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
        helpers, self.helpers = [*self.helpers.values(), *self._retired], {}
        self._retired = []
        for helper in helpers:
            if helper.reaper is not None:
                helper.reaper.cancel()
            if helper.name:
                await self._delete(helper.name)
        if self._ws is not None:
            await self._ws.close()
            self._ws = None

    # -- requests ----------------------------------------------------------------------------

    async def read(
        self, claim: str, path_: str, read_only: bool = True, hidden: bool = False
    ) -> StorageListing | FileContent:
        """A listing of folder ``path_`` or file ``path_`` streamed (its chunks come as
        the pod sends them); ``hidden``: hidden files are served."""
        rel = str(clean_relative(path_))
        query = {"path": rel, **({"hidden": "1"} if hidden else {})}
        answer = await self.request(claim, read_only, "GET", query)
        if answer.status == 200 and "json" not in answer.headers.get("content-type", ""):
            mtime = answer.headers.get("x-mtime")
            return FileContent(
                name=rel.rsplit("/", 1)[-1],
                size=answer.size,
                chunks=answer.chunks(),
                modified=datetime.fromtimestamp(float(mtime), timezone.utc) if mtime else None,
            )
        doc = await answer_doc(claim, answer)
        return StorageListing(
            storage=claim,
            path="" if rel == "." else rel,
            entries=[entry_model(e) for e in doc["entries"]],
        )

    async def request(
        self,
        claim: str,
        read_only: bool,
        method: str,
        query: dict[str, str],
        body: AsyncIterator[bytes] | None = None,
        length: int = 0,
    ) -> Answer:
        """One HTTP request to ``claim``'s helper pod (started on first use), the answer's
        head read; the caller reads its body (or closes it). A pod gone behind our back is
        replaced once, when no byte of ``body`` was taken yet."""
        taken = [False]

        async def watched(source: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
            async for chunk in source:
                taken[0] = True
                yield chunk

        sent = watched(body) if body is not None else None
        target = "/?" + urlencode(query)
        for attempt in (1, 2):
            helper = await self._helper(claim, read_only)
            try:
                answer = await self._ask(helper, method, target, sent, length)
            except BaseException as error:
                self._release(claim, helper)
                if not isinstance(error, Unavailable):
                    raise
                if self.helpers.get(claim) is helper:
                    del self.helpers[claim]
                    await self._delete(helper.name)
                if attempt == 2 or taken[0]:
                    raise
                continue
            # In use (not reaped) until its body is read or dropped.
            answer.on_close = functools.partial(self._release, claim, helper)
            return answer
        raise AssertionError("unreachable")

    async def _ask(
        self,
        helper: _Helper,
        method: str,
        target: str,
        body: AsyncIterator[bytes] | None,
        length: int,
        timeout: float = 30,
    ) -> Answer:
        """The server may not listen yet just after the pod turned Running, so a refused
        connection is retried a while (the refusal comes before the body is read)."""
        deadline = time.monotonic() + timeout
        if self._ws is None:
            self._ws = WsApiClient(configuration=self.rest.api.configuration)
        head = (
            f"{method} {target} HTTP/1.1\r\nHost: helper\r\nX-Token: {helper.token}\r\n"
            f"Content-Length: {length}\r\nConnection: close\r\n\r\n"
        ).encode()
        while True:
            self.rest.requests += 1
            try:
                connect = await open_stream(self._ws, self.namespace, helper.name, PORT)
                return await exchange(connect, head, body, length)
            except PortRefused as error:
                if time.monotonic() > deadline:
                    raise Unavailable(f"the storage helper pod does not answer: {error}") from None
                await asyncio.sleep(0.2)
            except aiohttp.WSServerHandshakeError as error:
                raise Unavailable(f"port-forward refused: {error.status} {error.message}") from None
            except (aiohttp.ClientError, OSError, asyncio.TimeoutError, ValueError) as error:
                raise Unavailable(
                    f"the storage helper pod does not answer: {str(error) or type(error).__name__}"
                ) from None


async def answer_doc(storage: str, answer: Answer) -> Any:
    """The answer's JSON; an error answer (an ``OpError`` kind) raises the core error the
    local backend raises for the same refusal."""
    doc = await answer.json()
    if answer.status >= 400:
        kind, message = doc.get("error", ""), doc.get("message", "")
        if kind in ("token", "os", ""):
            raise Unavailable(f"the storage helper pod refused: {message or kind}")
        if kind == "busy":
            raise Conflict(f"storage {storage}: {message}", [FieldError("path", message)])
        raise_op_error(storage, kind, message, int(doc.get("received") or 0))
    return doc
