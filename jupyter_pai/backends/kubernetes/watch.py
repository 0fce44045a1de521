"""The shared watch cache: one list + watch per resource kind and namespace.

Like kubespawner's reflector: list, then watch from that resourceVersion; a 410 Gone (or
any broken watch) lists again; errors back off (capped, so a returning API server is
caught up within seconds); :attr:`Reflector.healthy` says whether the store is current,
so readers answer 503 instead of serving stale data."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import sys
import time
from collections.abc import Callable, Iterable
from typing import Any

import aiohttp

from ...errors import Unavailable
from .resources import Kind
from .rest import ApiError, Obj, Rest, path

log = logging.getLogger("jupyter_pai.kubernetes.watch")

PAGE = 500
WATCH_SECONDS = 240


class Gone(Exception):
    """The resourceVersion is too old: list again."""


#: Text up to this length is kept once, shared by every cached object holding it: keys,
#: labels, kinds, the namespace, states. A namespace's 5,000 jobs repeat the same few
#: hundred, which were 40 % of the cache; longer text (a job's spec) is its object's own.
SHARED_TEXT_MAX = 64


def _shared(value: Any) -> Any:
    if isinstance(value, dict):
        return {sys.intern(k): _shared(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_shared(v) for v in value]
    if isinstance(value, str) and len(value) <= SHARED_TEXT_MAX:
        return sys.intern(value)
    return value


def _slim(obj: Obj) -> Obj:
    """The object as the store keeps it: without ``managedFields`` (server-side apply's
    bookkeeping, often larger than the rest of a small object, read by nothing here), its
    short text shared."""
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        meta.pop("managedFields", None)
    shared: Obj = _shared(obj)
    return shared


#: What is read of an Event (waiting reasons, job events): the rest is not kept.
EVENT_FIELDS = (
    "reason",
    "message",
    "type",
    "involvedObject",
    "firstTimestamp",
    "lastTimestamp",
    "eventTime",
)
EVENT_METADATA = ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
#: An event's message is shown in a line: a longer one is cut.
EVENT_MESSAGE_MAX = 2048


def slim_event(obj: Obj) -> Obj:
    """An Event as the store keeps it: a namespace's events come and go by the thousand
    (an hour each), so only the fields read are kept, a message cut at 2 KiB."""
    meta = obj.get("metadata") or {}
    out: Obj = {k: obj[k] for k in EVENT_FIELDS if k in obj}
    out["metadata"] = {k: meta[k] for k in EVENT_METADATA if k in meta}
    message = out.get("message")
    if isinstance(message, str) and len(message) > EVENT_MESSAGE_MAX:
        out["message"] = message[:EVENT_MESSAGE_MAX] + "…"
    shared: Obj = _shared(out)
    return shared


def _key(obj: Obj) -> str:
    meta = obj.get("metadata") or {}
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"


class Reflector:
    """A current copy of every object of one kind (optionally filtered by labels)."""

    def __init__(
        self,
        rest: Rest,
        kind: Kind,
        namespace: str | None,
        *,
        label_selector: str | None = None,
        index: Callable[[Obj], Iterable[str]] | None = None,
        max_backoff: float = 2.0,
        slim: Callable[[Obj], Obj] = _slim,
        keep: Callable[[Obj], bool] | None = None,
    ) -> None:
        """``slim``: what of each object is kept (default: all but ``managedFields``);
        ``keep``: whether to keep an object at all (one it refuses is as if deleted)."""
        self.rest = rest
        self._slim = slim
        self._keep = keep
        self.kind = kind
        self.namespace = namespace if kind.namespaced else None
        self.label_selector = label_selector
        self.max_backoff = max_backoff
        self.store: dict[str, Obj] = {}
        self._index_fn = index
        # Keys under each index value, as tuples: most values (a job's id, its name) hold
        # one key, and a namespace's thousands of one-key sets were a megabyte.
        self._index: dict[str, tuple[str, ...]] = {}
        # A value's stamp from `_clock` whenever an object under it changes, so a reader
        # can cache what it derives from `by_index(value)`. The clock never goes back (not
        # on a relist either), so a stamp is never reused; a value with no keys has none.
        self._index_versions: dict[str, int] = {}
        self._clock = 0
        self.epoch = 0
        self.healthy = False
        self.error: str | None = None
        self.version = 0  # bumped on every change
        self.synced_once = asyncio.Event()
        self._changed = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.lists = 0
        #: Called with each object added, changed or deleted, and every object of a relist
        #: (so a listener that missed watch events while the watch was broken catches up).
        self.listeners: list[Callable[[Obj], None]] = []

    # -- reading -------------------------------------------------------------------------

    def get(self, name: str, namespace: str | None = None) -> Obj | None:
        return self.store.get(f"{namespace or self.namespace or ''}/{name}")

    def values(self) -> list[Obj]:
        return list(self.store.values())

    def by_index(self, value: str) -> list[Obj]:
        return [self.store[k] for k in self._index.get(value, ()) if k in self.store]

    def index_version(self, value: str) -> int:
        """Changes whenever `by_index(value)` may have changed (0: it is empty)."""
        return self._index_versions.get(value, 0)

    def drop(self, value: str, which: Callable[[Obj], bool]) -> None:
        """Forget the objects under index ``value`` that ``which`` picks (until a relist
        or a change brings them back)."""
        keys = [k for k in self._index.get(value, ()) if k in self.store and which(self.store[k])]
        for key in keys:
            self._unindex(key)
            del self.store[key]
        if keys:
            self._touch()

    async def changed(self, timeout: float) -> None:
        """Wait until the store changes (or ``timeout``)."""
        self._changed.clear()
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(self._changed.wait(), timeout)

    # -- life cycle ----------------------------------------------------------------------

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name=f"reflector-{self.kind.plural}")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    async def _run(self) -> None:
        backoff = 0.1
        while True:
            try:
                rv = await self._list()
                self._mark(True, None)
                backoff = 0.1
                while True:
                    rv = await self._watch(rv)
            except Gone:
                log.info("watch %s: resourceVersion gone, listing again", self.kind.plural)
                continue
            except asyncio.CancelledError:
                raise
            except Exception as error:  # keep the reflector alive; readers see it unhealthy
                self._mark(False, _describe(error))
                log.warning(
                    "watch %s failed (%s); retrying in %.1fs", self.kind.plural, self.error, backoff
                )
                await asyncio.sleep(backoff)
                backoff = min(self.max_backoff, backoff * 2)

    def _mark(self, healthy: bool, error: str | None) -> None:
        self.healthy, self.error = healthy, error
        if healthy:
            self.synced_once.set()
        self._touch()

    def _touch(self) -> None:
        self.version += 1
        self._changed.set()

    async def _list(self) -> str:
        url = path(self.kind, self.namespace)
        items: dict[str, Obj] = {}
        token: str | None = None
        while True:
            try:
                page = await self.rest.get(
                    url, labelSelector=self.label_selector, limit=PAGE, **{"continue": token}
                )
            except ApiError as error:
                if error.status == 410:
                    raise Gone() from None
                raise
            self.lists += 1
            for item in page.get("items") or []:
                if self._keep is None or self._keep(item):
                    items[_key(item)] = self._slim(item)
            token = (page.get("metadata") or {}).get("continue")
            if not token:
                break
        self.store = items
        self.epoch += 1
        self._reindex()
        for item in items.values():
            self._tell(item)
        return str((page.get("metadata") or {}).get("resourceVersion") or "")

    async def _watch(self, rv: str) -> str:
        resp = await self.rest.open(
            "GET",
            path(self.kind, self.namespace),
            query={
                "watch": "1",
                "resourceVersion": rv,
                "allowWatchBookmarks": "true",
                "timeoutSeconds": WATCH_SECONDS,
                "labelSelector": self.label_selector,
            },
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=5, sock_read=WATCH_SECONDS + 30),
        )
        self._mark(True, None)
        async for line in self.rest.lines(resp):
            event = json.loads(line)
            kind, obj = event.get("type"), event.get("object") or {}
            if kind not in ("ERROR", "BOOKMARK"):  # a Status or a bare version: kept whole
                obj = self._slim(obj)
            if kind == "ERROR":
                if obj.get("code") == 410:
                    raise Gone()
                raise ApiError(
                    int(obj.get("code") or 500), str(obj.get("reason")), str(obj.get("message"))
                )
            rv = str((obj.get("metadata") or {}).get("resourceVersion") or rv)
            if kind == "BOOKMARK":
                continue
            key = _key(obj)
            if kind == "DELETED" or (self._keep is not None and not self._keep(obj)):
                self._unindex(key)
                self.store.pop(key, None)
            else:
                self._unindex(key)
                self.store[key] = obj
                self._add_index(key, obj)
            self._touch()
            self._tell(obj)
        return rv

    def _tell(self, obj: Obj) -> None:
        for listener in self.listeners:
            try:
                listener(obj)
            except Exception:  # a listener's bug must not break the watch
                log.exception("watch %s: listener failed", self.kind.plural)

    # -- index ---------------------------------------------------------------------------

    def _reindex(self) -> None:
        self._index = {}
        self._index_versions = {}
        for key, obj in self.store.items():
            self._add_index(key, obj)

    def _add_index(self, key: str, obj: Obj) -> None:
        if self._index_fn is None:
            return
        for value in self._index_fn(obj):
            keys = self._index.get(value, ())
            if key not in keys:
                self._index[value] = (*keys, key)
            self._stamp(value)

    def _unindex(self, key: str) -> None:
        old = self.store.get(key)
        if old is None or self._index_fn is None:
            return
        for value in self._index_fn(old):
            keys = tuple(k for k in self._index.get(value, ()) if k != key)
            if keys:
                self._index[value] = keys
                self._stamp(value)
            else:
                self._index.pop(value, None)
                self._index_versions.pop(value, None)

    def _stamp(self, value: str) -> None:
        self._clock += 1
        self._index_versions[value] = self._clock


def _describe(error: BaseException) -> str:
    if isinstance(error, Unavailable):
        return error.message
    return str(error) or type(error).__name__


class WatchCache:
    """The reflectors of one backend; ready only when every one is current."""

    def __init__(self) -> None:
        self.reflectors: dict[str, Reflector] = {}

    def add(self, name: str, reflector: Reflector) -> Reflector:
        self.reflectors[name] = reflector
        return reflector

    def __getitem__(self, name: str) -> Reflector:
        return self.reflectors[name]

    def start(self) -> None:
        for r in self.reflectors.values():
            r.start()

    async def stop(self) -> None:
        for r in self.reflectors.values():
            await r.stop()

    async def wait_synced(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        for r in self.reflectors.values():
            left = deadline - time.monotonic()
            try:
                await asyncio.wait_for(r.synced_once.wait(), max(0.01, left))
            except asyncio.TimeoutError:
                return False
        return all(r.healthy for r in self.reflectors.values())

    def check(self) -> None:
        """Raise 503 unless every store is current."""
        bad = [r for r in self.reflectors.values() if not r.healthy]
        if bad:
            detail = "; ".join(f"{r.kind.plural}: {r.error or 'not synced yet'}" for r in bad)
            raise Unavailable(f"cluster unreachable, so job information could be stale ({detail})")

    @property
    def version(self) -> tuple[int, ...]:
        return tuple(r.version for r in self.reflectors.values())

    def counters(self) -> tuple[tuple[int, int], ...]:
        """Each store's (epoch, version): changes whenever anything in the cache does,
        a re-list after a lost watch included."""
        return tuple((r.epoch, r.version) for r in self.reflectors.values())
