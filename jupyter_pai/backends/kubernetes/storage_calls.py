"""A storage's reads and writes through its helper pod (:mod:`.storage`): one request each,
the pod's answers turned into models, its errors (``storage_ops.OpError`` kinds) into the
same core errors the local backend raises. Paths are checked here before any pod is asked
(and again in the pod); a read-only storage refuses every write before any pod is asked.
The pod learns whether hidden files are served from each request (``hidden=1``); the
protected folders are folders of this machine, so only a local mapping checks them."""

from __future__ import annotations

from pathlib import Path

from ...errors import BadRequest, FieldError, Forbidden
from .. import storage_fs
from ..base import FileContent, UploadPiece
from ..models import StorageEntry, StorageListing, UploadState
from ..storage_fs import clean_relative
from ..storage_ops import Rules
from ..storage_writes import FolderWrites, entry_model
from .storage import HelperPods, answer_doc

ARCHIVES = ("zip", "tar.gz")


def _rel(path: str, field: str = "path") -> str:
    try:
        return str(clean_relative(path))
    except BadRequest as error:
        if field == "path":
            raise
        said = error.errors[0].message if error.errors else error.message
        raise BadRequest(f"{field}: {error.message}", [FieldError(field, said)]) from None


def refuse_read_only(storage: str, read_only: bool) -> None:
    if read_only:
        raise Forbidden(
            f"storage {storage} is read-only",
            [FieldError("storage", f"{storage} is read-only")],
        )


class StorageCalls:
    """:class:`..base.Backend`'s storage methods for one claim: through its helper pod,
    or where this server mounts the claim (``local``), on that folder."""

    def __init__(
        self, helpers: HelperPods, local: Path | None = None, rules: Rules | None = None
    ) -> None:
        self.helpers = helpers
        self.local = local
        self.rules = rules or Rules()

    def _folder(self, storage: str) -> FolderWrites | None:
        if self.local is None:
            return None
        return FolderWrites(storage, str(self.local), self.rules)

    def _ask(self, query: dict[str, str]) -> dict[str, str]:
        """A request's query, with what the pod must know of the rules."""
        return {**query, "hidden": "1"} if self.rules.hidden else query

    async def read(self, storage: str, path: str, read_only: bool) -> StorageListing | FileContent:
        _rel(path)  # traversal refused before anything runs
        if self.local is not None:
            return await storage_fs.read_path(storage, self.local, path, self.rules)
        return await self.helpers.read(storage, path, read_only, hidden=self.rules.hidden)

    async def write(
        self, storage: str, path: str, piece: UploadPiece, read_only: bool
    ) -> UploadState:
        refuse_read_only(storage, read_only)
        rel = _rel(path)
        if piece.offset < 0 or piece.size < 0 or piece.offset + piece.size > piece.total:
            raise BadRequest(
                f"bytes {piece.offset}+{piece.size} do not fit in a file of {piece.total}",
                [FieldError("Content-Range", "the piece lies outside the file")],
            )
        if folder := self._folder(storage):
            return await folder.write(path, piece)
        query = self._ask({"path": rel, "offset": str(piece.offset), "total": str(piece.total)})
        try:
            answer = await self.helpers.request(
                storage, False, "PUT", query, piece.chunks, piece.size
            )
        except (OverflowError, EOFError) as error:
            raise BadRequest(str(error), [FieldError("Content-Range", str(error))]) from None
        doc = await answer_doc(storage, answer)
        return UploadState(
            storage=storage,
            path=rel,
            received=doc["received"],
            total=doc["total"],
            complete=doc["complete"],
        )

    async def upload_state(self, storage: str, path: str, read_only: bool) -> UploadState:
        refuse_read_only(storage, read_only)
        rel = _rel(path)
        if folder := self._folder(storage):
            return await folder.upload_state(path)
        query = self._ask({"path": rel, "upload": "1"})
        answer = await self.helpers.request(storage, False, "GET", query)
        doc = await answer_doc(storage, answer)
        return UploadState(storage=storage, path=rel, received=doc["received"])

    async def make_folder(self, storage: str, path: str, read_only: bool) -> StorageEntry:
        refuse_read_only(storage, read_only)
        if folder := self._folder(storage):
            return await folder.make_folder(_rel(path))
        answer = await self.helpers.request(storage, False, "POST", self._ask({"path": _rel(path)}))
        return entry_model(await answer_doc(storage, answer))

    async def move(self, storage: str, path: str, to: str, read_only: bool) -> StorageEntry:
        refuse_read_only(storage, read_only)
        query = {"path": _rel(path), "to": _rel(to, "to")}
        if folder := self._folder(storage):
            return await folder.move(query["path"], query["to"])
        answer = await self.helpers.request(storage, False, "PATCH", self._ask(query))
        return entry_model(await answer_doc(storage, answer))

    async def delete(
        self, storage: str, path: str, recursive: bool, read_only: bool, upload: bool = False
    ) -> None:
        refuse_read_only(storage, read_only)
        query = {"path": _rel(path), "recursive": "1" if recursive else "0"}
        if upload:
            query["upload"] = "1"
        if folder := self._folder(storage):
            return await folder.delete(query["path"], recursive, upload)
        answer = await self.helpers.request(storage, False, "DELETE", self._ask(query))
        await answer_doc(storage, answer)

    async def archive(self, storage: str, path: str, fmt: str, read_only: bool) -> FileContent:
        if fmt not in ARCHIVES:
            raise BadRequest(
                f"archive format {fmt!r} is not one of {', '.join(ARCHIVES)}",
                [FieldError("archive", "zip or tar.gz")],
            )
        rel = _rel(path)
        if folder := self._folder(storage):
            return await folder.archive(rel, fmt)
        answer = await self.helpers.request(
            storage, read_only, "GET", self._ask({"path": rel, "archive": fmt})
        )
        if answer.status != 200:
            await answer_doc(storage, answer)
        name = storage if rel == "." else rel.rsplit("/", 1)[-1]
        return FileContent(name=f"{name}.{fmt}", size=None, chunks=answer.chunks())
