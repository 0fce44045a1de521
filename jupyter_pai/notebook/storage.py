"""``client.storage(name)``: one storage as a place to work from Python — list, upload (a
file or a whole folder, in pieces that resume after a cut connection), download (a folder
as a ``tar.gz`` archive unpacked as it is checked), make folders, move, delete.

The same calls work whichever way the client is connected: through a Jupyter server's REST
API (``PUT`` with ``Content-Range``, ``GET ?upload=1``, ``GET ?archive=tar.gz``) or
through the configured backend in this process. Files go piece by piece and archives
through a temporary file: nothing holds a whole big file in memory.
"""

from __future__ import annotations

import abc
import asyncio
import contextlib
import os
import posixpath
import tempfile
from collections.abc import AsyncIterator, Coroutine
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import quote

from ..backends.base import UploadPiece
from ..backends.models import StorageEntry, StorageListing, UploadState
from ..backends.storage_writes import OffsetConflict
from ..errors import BadRequest, FieldError, NotFound
from .connection import BackendConnection, Connection
from .storage_files import BLOCK, Plan, Progress, join, local_target, read_piece, unpack

if TYPE_CHECKING:
    from .loop import LoopThread

__all__ = ["StorageClient", "UploadedFile"]

T = TypeVar("T")


@dataclass
class UploadedFile:
    """One uploaded file: its ``path`` in the storage, its ``size``, and the bytes this
    call ``sent`` (less than ``size`` when an earlier, cut upload was resumed)."""

    path: str
    size: int
    sent: int


class _Transport(abc.ABC):
    """How the storage calls reach a storage: a server's REST API, or the backend."""

    def __init__(self, name: str) -> None:
        self.name = name

    @abc.abstractmethod
    async def listing(self, path: str) -> StorageListing | None:
        """A folder's listing; None for a file."""

    @abc.abstractmethod
    async def upload_state(self, path: str) -> UploadState: ...

    @abc.abstractmethod
    async def put(self, path: str, offset: int, total: int, data: list[bytes]) -> UploadState:
        """Bytes ``offset…`` of a ``total``-byte file; OffsetConflict names what arrived."""

    @abc.abstractmethod
    async def make_folder(self, path: str) -> StorageEntry: ...

    @abc.abstractmethod
    async def move(self, path: str, to: str) -> StorageEntry: ...

    @abc.abstractmethod
    async def delete(self, path: str, recursive: bool) -> None: ...

    @abc.abstractmethod
    def read(self, path: str, archive: str | None = None) -> AsyncIterator[bytes]:
        """A file's bytes, or a folder's archive, as they arrive."""


class _RestTransport(_Transport):
    def __init__(self, name: str, connection: Any) -> None:
        super().__init__(name)
        from .rest import RestConnection, error_from  # aiohttp: only for a server's client

        assert isinstance(connection, RestConnection)
        self.rest = connection
        self.error_from = error_from

    def url(self, path: str) -> str:
        return "storage/" + "/".join(quote(p, safe="") for p in [self.name, *path.split("/")] if p)

    async def _send(
        self,
        method: str,
        path: str,
        *,
        params: dict[str, str] | None = None,
        body: bytes | str | None = None,
        headers: dict[str, str] | None = None,
        timeout: float | None = None,
    ) -> Any:
        import aiohttp
        import yarl

        what = f"{method} {self.url(path)}"
        try:
            response = await self.rest.session().request(
                method,
                yarl.URL(self.rest.base + self.url(path), encoded=True),
                params=params or {},
                data=body,
                headers=headers or {},
                timeout=aiohttp.ClientTimeout(
                    total=timeout, sock_connect=self.rest._timeout, sock_read=self.rest._timeout
                ),
            )
        except (aiohttp.ClientError, OSError) as exc:
            from ..errors import Unavailable

            raise Unavailable(f"{what}: Jupyter server unreachable: {exc}") from None
        if response.status >= 300:
            text = await response.read()
            response.release()
            error = self.error_from(response.status, text, what)
            offset = response.headers.get("Upload-Offset", "")
            if response.status == 409 and offset.isdigit():
                raise OffsetConflict(str(error), error.errors, int(offset))
            raise error
        return response

    async def _json(self, method: str, path: str, model: type[T], **kwargs: Any) -> T:
        response = await self._send(method, path, timeout=self.rest._timeout, **kwargs)
        async with response:
            return model.model_validate_json(await response.read())  # type: ignore[attr-defined,no-any-return]

    async def listing(self, path: str) -> StorageListing | None:
        response = await self._send("GET", path, timeout=self.rest._timeout)
        async with response:
            if response.content_type != "application/json":
                return None  # a file: left unread
            body = await response.read()
            with contextlib.suppress(ValueError):
                return StorageListing.model_validate_json(body)
            return None  # a .json file

    async def upload_state(self, path: str) -> UploadState:
        return await self._json("GET", path, UploadState, params={"upload": "1"})

    async def put(self, path: str, offset: int, total: int, data: list[bytes]) -> UploadState:
        body = b"".join(data)
        headers = {"Content-Type": "application/octet-stream"}
        if total:
            headers["Content-Range"] = f"bytes {offset}-{offset + len(body) - 1}/{total}"
        # A piece may take long on a slow link: no total limit, reads time out as usual.
        response = await self._send("PUT", path, body=body, headers=headers)
        async with response:
            return UploadState.model_validate_json(await response.read())

    async def make_folder(self, path: str) -> StorageEntry:
        body = '{"type": "directory"}'
        headers = {"Content-Type": "application/json"}
        return await self._json("POST", path, StorageEntry, body=body, headers=headers)

    async def move(self, path: str, to: str) -> StorageEntry:
        import json

        body = json.dumps({"path": to})
        headers = {"Content-Type": "application/json"}
        return await self._json("PATCH", path, StorageEntry, body=body, headers=headers)

    async def delete(self, path: str, recursive: bool) -> None:
        params = {"recursive": "true" if recursive else "false"}
        response = await self._send("DELETE", path, params=params, timeout=self.rest._timeout)
        response.release()

    async def read(self, path: str, archive: str | None = None) -> AsyncIterator[bytes]:
        params = {"archive": archive} if archive else {}
        response = await self._send("GET", path, params=params)
        async with response:
            async for chunk in response.content.iter_chunked(BLOCK):
                yield chunk


class _BackendTransport(_Transport):
    def __init__(self, name: str, connection: BackendConnection) -> None:
        super().__init__(name)
        self.connection = connection

    async def listing(self, path: str) -> StorageListing | None:
        found = await (await self.connection.backend()).read_storage(self.name, path)
        if isinstance(found, StorageListing):
            return found
        await _close(found.chunks)  # a file: left unread
        return None

    async def upload_state(self, path: str) -> UploadState:
        return await (await self.connection.backend()).upload_state(self.name, path)

    async def put(self, path: str, offset: int, total: int, data: list[bytes]) -> UploadState:
        async def chunks() -> AsyncIterator[bytes]:
            for block in data:
                yield block

        size = sum(len(b) for b in data)
        piece = UploadPiece(offset=offset, size=size, total=total, chunks=chunks())
        return await (await self.connection.backend()).write_storage(self.name, path, piece)

    async def make_folder(self, path: str) -> StorageEntry:
        return await (await self.connection.backend()).make_folder(self.name, path)

    async def move(self, path: str, to: str) -> StorageEntry:
        return await (await self.connection.backend()).move_storage(self.name, path, to)

    async def delete(self, path: str, recursive: bool) -> None:
        await (await self.connection.backend()).delete_storage(self.name, path, recursive)

    async def read(self, path: str, archive: str | None = None) -> AsyncIterator[bytes]:
        backend = await self.connection.backend()
        if archive:
            found = await backend.archive_storage(self.name, path, archive)
        else:
            content = await backend.read_storage(self.name, path)
            if isinstance(content, StorageListing):
                raise BadRequest(
                    f"storage {self.name}: {path!r} is a folder", [FieldError("path", "a folder")]
                )
            found = content
        try:
            async for chunk in found.chunks:
                yield chunk
        finally:
            await _close(found.chunks)


async def _close(chunks: AsyncIterator[bytes]) -> None:
    closer = getattr(chunks, "aclose", None)
    if closer is not None:
        await closer()


def transport(name: str, connection: Connection) -> _Transport:
    if isinstance(connection, BackendConnection):
        return _BackendTransport(name, connection)
    return _RestTransport(name, connection)


class StorageClient:
    """Storage ``name`` through a :class:`~jupyter_pai.Client` (``client.storage(name)``).
    Paths are inside the storage, ``/``-separated (``""`` is its top folder). Errors are the
    core's typed errors with the server's words: ``NotFound``, ``Forbidden`` (a read-only
    storage, a path leading out), ``Conflict`` (a folder that needs ``recursive``, a name
    taken), ``InsufficientStorage`` (the storage is full)."""

    def __init__(self, name: str, connection: Connection, loop: LoopThread) -> None:
        self.name = name
        self._transport = transport(name, connection)
        self._loop = loop

    def __repr__(self) -> str:
        return f"<jupyter_pai.StorageClient {self.name}>"

    def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        return self._loop.run(coro)

    # -- blocking --------------------------------------------------------------------------

    def ls(self, path: str = "") -> list[StorageEntry]:
        """A folder's entries (a file: its own entry)."""
        return self._run(self._ls(path))

    def upload(
        self,
        src: str | os.PathLike[str],
        dst: str = "",
        *,
        piece_mb: float = 8,
        progress: bool = True,
    ) -> list[UploadedFile]:
        """Uploads file or folder ``src`` of this machine. ``dst`` "" or ending in ``/``,
        or an existing folder: ``src`` goes inside it under its own name; otherwise ``dst``
        is its new name. Each file goes in pieces of ``piece_mb`` MiB; a file whose upload
        was cut off resumes where the storage says it stopped (it keeps the bytes that
        arrived, not a checksum: resume with the same file)."""
        return self._run(self._upload(os.fspath(src), dst, piece_mb, progress))

    def download(self, src: str, dst: str | os.PathLike[str] = ".") -> str:
        """Downloads file or folder ``src`` to ``dst`` (into it when it is an existing
        folder); a folder comes as a ``tar.gz`` archive unpacked on arrival. Returns the
        local path written."""
        return self._run(self._download(src, os.fspath(dst)))

    def rm(self, path: str, recursive: bool = False) -> None:
        """Deletes a file, or a folder (one with anything in it only when ``recursive``)."""
        self._run(self._transport.delete(path, recursive))

    def mkdir(self, path: str) -> StorageEntry:
        """Makes folder ``path`` and missing parents (an existing folder is fine)."""
        return self._run(self._transport.make_folder(path))

    def mv(self, src: str, dst: str) -> StorageEntry:
        """Renames or moves ``src`` to ``dst`` inside this storage."""
        return self._run(self._transport.move(src, dst))

    # -- async twins -----------------------------------------------------------------------

    async def ls_async(self, path: str = "") -> list[StorageEntry]:
        return await self._loop.run_async(self._ls(path))

    async def upload_async(
        self,
        src: str | os.PathLike[str],
        dst: str = "",
        *,
        piece_mb: float = 8,
        progress: bool = True,
    ) -> list[UploadedFile]:
        return await self._loop.run_async(self._upload(os.fspath(src), dst, piece_mb, progress))

    async def download_async(self, src: str, dst: str | os.PathLike[str] = ".") -> str:
        return await self._loop.run_async(self._download(src, os.fspath(dst)))

    async def rm_async(self, path: str, recursive: bool = False) -> None:
        await self._loop.run_async(self._transport.delete(path, recursive))

    async def mkdir_async(self, path: str) -> StorageEntry:
        return await self._loop.run_async(self._transport.make_folder(path))

    async def mv_async(self, src: str, dst: str) -> StorageEntry:
        return await self._loop.run_async(self._transport.move(src, dst))

    # -- shared ----------------------------------------------------------------------------

    async def _ls(self, path: str) -> list[StorageEntry]:
        path = path.strip("/")
        found = await self._transport.listing(path)
        if found is not None:
            return found.entries
        entry = await self._entry(path)
        assert entry is not None  # it was just read as a file
        return [entry]

    async def _entry(self, path: str) -> StorageEntry | None:
        """``path``'s entry in its folder's listing; None when there is nothing there."""
        path = path.strip("/")
        if not path:
            return StorageEntry(name="", path="", type="directory")
        parent, name = posixpath.split(path)
        try:
            found = await self._transport.listing(parent)
        except NotFound:
            return None
        for entry in found.entries if found else []:
            if entry.name == name:
                return entry
        return None

    async def _upload(
        self, src: str, dst: str, piece_mb: float, progress: bool
    ) -> list[UploadedFile]:
        if not piece_mb > 0:
            raise BadRequest(f"piece_mb={piece_mb}", [FieldError("piece_mb", "more than 0")])
        piece = max(1, int(piece_mb * 1024 * 1024))
        plan = await asyncio.to_thread(Plan.of, src)
        target = dst.strip("/")
        if not target or dst.endswith("/") or await self._is_folder(target):
            target = join(target, plan.name)
        if not plan.folder:
            ((local, _, size),) = plan.files
            return [await self._upload_file(local, target, size, piece, progress)]
        await self._transport.make_folder(target)
        for rel in plan.empty:
            await self._transport.make_folder(join(target, rel))
        return [
            await self._upload_file(local, join(target, rel), size, piece, progress)
            for local, rel, size in plan.files
        ]

    async def _is_folder(self, path: str) -> bool:
        entry = await self._entry(path)
        return entry is not None and entry.type == "directory"

    async def _upload_file(
        self, src: str, dst: str, total: int, piece: int, progress: bool
    ) -> UploadedFile:
        shown = Progress(f"{self.name}/{dst}", total, progress)
        offset = 0
        if total:
            state = await self._transport.upload_state(dst)
            # A cut upload resumes where the storage says it stopped (it keeps no total, so
            # any shorter upload counts); more bytes than this file has: start over.
            known = state.total in (None, total)
            if known and 0 < state.received < total and not state.complete:
                offset = state.received
        sent = conflicts = 0
        file = await asyncio.to_thread(open, src, "rb")
        try:
            while True:
                data = await asyncio.to_thread(read_piece, file, offset, min(piece, total - offset))
                try:
                    state = await self._transport.put(dst, offset, total, data)
                except OffsetConflict as conflict:
                    # The storage has another count (a piece landed though its answer was
                    # lost): go on from there, a few times at most (another writer?).
                    conflicts += 1
                    moved = conflict.received != offset and 0 <= conflict.received < total
                    if not moved or conflicts > 3:
                        raise
                    offset = conflict.received
                    continue
                size = sum(len(b) for b in data)
                sent += size
                offset += size
                shown.update(offset)
                if offset >= total:
                    break
        finally:
            await asyncio.to_thread(file.close)
        shown.update(total, final=True)
        return UploadedFile(path=dst, size=total, sent=sent)

    async def _download(self, src: str, dst: str) -> str:
        src = src.strip("/")
        entry = await self._entry(src)
        if entry is None:
            raise NotFound(f"storage {self.name}: nothing at {src!r}", [FieldError("path", src)])
        name = posixpath.basename(src) or self.name
        target, folder = await asyncio.to_thread(local_target, dst, name)
        if entry.type != "directory":
            await self._save(self._transport.read(src), target)
            return target
        fd, archive = tempfile.mkstemp(prefix=".pai-download-", suffix=".tar.gz", dir=folder)
        os.close(fd)
        try:
            await self._save(self._transport.read(src, "tar.gz"), archive)
            await asyncio.to_thread(unpack, archive, target)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(archive)
        return target

    @staticmethod
    async def _save(chunks: AsyncIterator[bytes], target: str) -> None:
        """Streams ``chunks`` into ``target`` through a temporary name beside it: a cut
        download leaves no half file under the name."""
        fd, temp = tempfile.mkstemp(prefix=".pai-download-", dir=os.path.dirname(target))
        try:
            with os.fdopen(fd, "wb") as out:
                async for chunk in chunks:
                    await asyncio.to_thread(out.write, chunk)
            os.replace(temp, target)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temp)
            raise
