"""Storage writes shared by the backends: :func:`raise_op_error` turns an ``OpError`` kind
of :mod:`.storage_ops` (raised in this process, or answered by the Kubernetes storage helper
pod) into the core's error, so both backends answer the same status and words for the same
refusal; :class:`FolderWrites` runs the operations on a storage that is a folder on this
machine, off the event loop."""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator, Callable, Iterator
from datetime import datetime, timezone
from typing import Any, NoReturn, TypeVar

from ..errors import (
    BadRequest,
    Conflict,
    FieldError,
    Forbidden,
    InsufficientStorage,
    NotFound,
    PAIError,
    Unavailable,
)
from . import storage_ops
from .base import FileContent, UploadPiece
from .models import StorageEntry, UploadState

T = TypeVar("T")
#: How long a piece waits for an earlier one to the same file (a cut connection's writer
#: finishing what arrived) before it is refused.
BUSY_SECONDS = 10.0


class _Held:
    def __init__(self) -> None:
        self.lock = asyncio.Lock()
        self.users = 0


_WRITING: dict[tuple[str, str], _Held] = {}


class OffsetConflict(Conflict):
    """A piece that does not start where the upload is: ``received`` says where it is (the
    server sends it back as ``Upload-Offset``)."""

    def __init__(self, message: str, errors: list[FieldError], received: int) -> None:
        super().__init__(message, errors)
        self.received = received


#: The request field each kind is about (the error names it).
_FIELDS = {"offset": "Content-Range", "range": "Content-Range", "notempty": "recursive"}


def raise_op_error(storage: str, kind: str, message: str, received: int = 0) -> NoReturn:
    """Raises the core error of an ``OpError`` of ``kind`` on storage ``storage``;
    ``received``: the bytes an upload has so far (kind "offset")."""
    field = _FIELDS.get(kind, "to" if message.startswith("to ") else "path")
    said = f"storage {storage}: {message}"
    error: PAIError
    if kind == "full":
        error = InsufficientStorage(
            f"storage {storage} is full", [FieldError(field, "no room is left for the file")]
        )
    elif kind == "readonly":
        error = Forbidden(f"storage {storage} is read-only", [FieldError(field, message)])
    elif kind in ("outside", "denied", "hidden", "protected"):
        error = Forbidden(said, [FieldError(field, message)])
    elif kind == "missing":
        error = NotFound(said, [FieldError(field, message)])
    elif kind == "offset":
        error = OffsetConflict(
            said,
            [FieldError(field, f"{received} bytes were received: send from byte {received}")],
            received,
        )
    elif kind in ("exists", "notempty", "notdir"):
        error = Conflict(said, [FieldError(field, message)])
    elif kind in ("badpath", "isdir", "range"):
        error = BadRequest(said, [FieldError(field, message)])
    else:
        error = Unavailable(f"storage {storage}: {message or kind}")
    raise error


async def in_thread(storage: str, call: Callable[..., T], *args: Any) -> T:
    """``call(*args)`` (a storage operation) off the event loop, its ``OpError`` raised as
    the core's error."""
    try:
        return await asyncio.to_thread(call, *args)
    except storage_ops.OpError as error:
        raise_op_error(storage, error.kind, error.message, error.received)


def is_read_only(conf: dict[str, Any]) -> bool:
    """Whether a ``storages_config`` entry is read-only (``readOnly`` or ``read_only``)."""
    return bool(conf.get("readOnly", conf.get("read_only", False)))


def entry_model(doc: dict[str, Any]) -> StorageEntry:
    """A :func:`.storage_ops.entry` as the API's model."""
    return StorageEntry(
        name=doc["name"],
        path=doc["path"],
        type="directory" if doc["dir"] else "file",
        size=None if doc["dir"] else doc["size"],
        modified=datetime.fromtimestamp(doc["mtime"], timezone.utc),
    )


class FolderWrites:
    """The writes of a storage that is a folder on this machine (the local backend's, and a
    Kubernetes claim mounted where the server runs). Each operation runs in the default
    thread pool a short step at a time: an upload holds no thread while it waits for the
    network."""

    def __init__(self, storage: str, root: str, rules: storage_ops.Rules | None = None) -> None:
        self.storage = storage
        self.root = root
        self.rules = rules or storage_ops.Rules()

    @classmethod
    def configured(
        cls,
        storages: dict[str, Any],
        name: str,
        write: bool,
        rules: storage_ops.Rules | None = None,
    ) -> FolderWrites:
        """Storage ``name`` of a ``storages_config`` (``{name: {"path", "readOnly"}}``);
        ``write``: refuse a read-only one."""
        conf = storages.get(name)
        if conf is None:
            raise NotFound(f"no storage {name!r}", [FieldError("storage", "no such storage")])
        if write and is_read_only(conf):
            raise Forbidden(
                f"storage {name} is read-only", [FieldError("storage", f"{name} is read-only")]
            )
        return cls(name, os.path.expanduser(str(conf["path"])), rules)

    async def write(self, path: str, piece: UploadPiece) -> UploadState:
        if piece.offset < 0 or piece.size < 0 or piece.offset + piece.size > piece.total:
            raise BadRequest(
                f"bytes {piece.offset}+{piece.size} do not fit in a file of {piece.total}",
                [FieldError("Content-Range", "the piece lies outside the file")],
            )
        name = self.storage
        async with self._one_writer(path, wait=BUSY_SECONDS):
            writer = await in_thread(
                name,
                storage_ops.PieceWriter,
                self.root,
                path,
                piece.offset,
                piece.total,
                self.rules,
            )
            try:
                async for chunk in piece.chunks:
                    await in_thread(name, writer.write, chunk)
            finally:
                await asyncio.to_thread(writer.close)
            done = await in_thread(name, writer.finish)
        return UploadState(storage=name, path=_clean(path), **done)

    async def upload_state(self, path: str) -> UploadState:
        # A piece whose connection was just cut may still be writing what arrived: its
        # bytes count, so wait for it a moment.
        with contextlib.suppress(Conflict):
            async with self._one_writer(path, wait=BUSY_SECONDS):
                pass
        received = await in_thread(
            self.storage, storage_ops.upload_received, self.root, path, self.rules
        )
        return UploadState(storage=self.storage, path=_clean(path), received=received)

    @contextlib.asynccontextmanager
    async def _one_writer(self, path: str, wait: float) -> AsyncIterator[None]:
        """One piece at a time per file: two writers of one temporary file would mix
        their bytes."""
        key = (self.root, _clean(path))
        held = _WRITING.setdefault(key, _Held())
        held.users += 1
        try:
            try:
                await asyncio.wait_for(held.lock.acquire(), wait)
            except asyncio.TimeoutError:
                raise Conflict(
                    f"storage {self.storage}: an upload to {_clean(path)!r} is under way",
                    [FieldError("path", "another upload to this file is under way")],
                ) from None
            try:
                yield
            finally:
                held.lock.release()
        finally:
            held.users -= 1
            if not held.users:
                del _WRITING[key]

    async def make_folder(self, path: str) -> StorageEntry:
        return entry_model(
            await in_thread(self.storage, storage_ops.make_folder, self.root, path, self.rules)
        )

    async def move(self, path: str, to: str) -> StorageEntry:
        return entry_model(
            await in_thread(self.storage, storage_ops.move, self.root, path, to, self.rules)
        )

    async def delete(self, path: str, recursive: bool, upload: bool = False) -> None:
        if upload:
            await in_thread(self.storage, storage_ops.discard_upload, self.root, path, self.rules)
            return
        await in_thread(self.storage, storage_ops.delete, self.root, path, recursive, self.rules)

    async def archive(self, path: str, fmt: str) -> FileContent:
        blocks = await in_thread(
            self.storage, storage_ops.archive, self.root, path, fmt, self.rules
        )
        name = _clean(path).rsplit("/", 1)[-1] or self.storage
        return FileContent(name=f"{name}.{fmt}", size=None, chunks=_blocks(self.storage, blocks))


def _clean(path: str) -> str:
    return "/".join(p for p in path.replace("\\", "/").split("/") if p not in ("", "."))


async def _blocks(storage: str, blocks: Iterator[bytes]) -> AsyncIterator[bytes]:
    """An archive's blocks, each made in a thread; closed early when the client goes."""
    try:
        while True:
            block = await in_thread(storage, next, blocks, None)
            if block is None:
                return
            if block:
                yield block
    finally:
        await asyncio.to_thread(blocks.close)  # type: ignore[attr-defined]
