"""``storage`` and ``storage/{name}/{path}``: a folder as JSON, a file as its bytes, a
folder as an archive; and the writes: ``PUT`` a file (whole, or a piece with
``Content-Range``, streamed into the storage as it arrives), ``POST`` a folder, ``PATCH`` a
new path, ``DELETE``."""

from __future__ import annotations

import asyncio
import json
import mimetypes
from typing import Any
from urllib.parse import quote

from jupyter_core.utils import ensure_async
from pydantic import BaseModel
from tornado import web
from tornado.iostream import StreamClosedError

from ...backends.base import Backend, FileContent
from ...backends.models import StorageList, UploadState
from ...backends.storage_writes import OffsetConflict
from ...errors import BadRequest, FieldError, TooLarge
from ..notebook_trust import one_chunk, open_notebook, save_notebook
from .base import MAX_BODY_BYTES, PAIHandler, ReadHandler, authorized
from .storage_upload import BodyPipe, UploadCut, upload_piece

ARCHIVE_TYPES = {"zip": "application/zip", "tar.gz": "application/gzip"}
TRUE, FALSE = ("true", "1", "yes"), ("false", "0", "no", "")


class StoragesHandler(ReadHandler):
    async def read(self, backend: Backend) -> BaseModel:
        return StorageList(items=await backend.storages())


def _disposition(kind: str, name: str) -> str:
    """``kind; filename="…"`` readable by every browser: an ASCII name, and the real one
    (RFC 6266) where it is not ASCII."""
    plain = name.encode("ascii", "replace").decode().replace('"', "_").replace("\\", "_")
    if plain == name:
        return f'{kind}; filename="{name}"'
    return f"{kind}; filename=\"{plain}\"; filename*=UTF-8''{quote(name)}"


@web.stream_request_body
class StorageHandler(PAIHandler):
    # Bodies are streamed: ``PUT`` takes up to ``PAIConfig.storage_piece_bytes``, the other
    # verbs a small JSON document (checked as it arrives).
    max_body_bytes = None

    def initialize(self) -> None:
        self._body = bytearray()
        self._pipe: BodyPipe | None = None
        self._writing: asyncio.Future[UploadState] | None = None
        self._notebook = False  # a PUT ?notebook=1: the body is kept whole, then parsed

    @property
    def content_security_policy(self) -> str:
        # A file answered as it is (HTML, SVG) would otherwise render on the Jupyter origin,
        # with its forms and its meta refresh: a bare sandbox gives it an opaque origin with
        # no scripts, forms, pop-ups or refresh (Jupyter's /files/ allows scripts; nothing
        # here needs them). The drives and the panel read these answers with fetch, which
        # a response's sandbox does not touch.
        return super().content_security_policy + "; sandbox"

    # APIHandler.prepare takes no arguments; mypy compares it with JupyterHandler's.
    async def prepare(self) -> None:  # type: ignore[override]
        await super().prepare()  # authentication and the XSRF check, before any body
        if self._finished:
            return
        if self.request.method == "PUT":
            await self._begin_upload()
            return
        length = self.request.headers.get("Content-Length", "0")
        if length.isdigit() and int(length) > MAX_BODY_BYTES:
            raise TooLarge(
                f"the request body is {length} bytes; at most {MAX_BODY_BYTES} are accepted",
                [FieldError("body", f"at most {MAX_BODY_BYTES} bytes")],
            )
        self.request.connection.set_max_body_size(MAX_BODY_BYTES)  # type: ignore[union-attr]

    async def _begin_upload(self) -> None:
        """Everything a ``PUT`` is refused for before its body is read (who asks, the size,
        the range), then the backend's writer, started to take the body as it comes."""
        user = self.current_user
        allowed = user is not None and await ensure_async(
            self.authorizer.is_authorized(self, user, "write", self.auth_resource)
        )
        if not allowed:
            raise web.HTTPError(403, "User is not authorized to write on resource: pai.")
        most = self.pai.config.storage_piece_bytes
        headers = self.request.headers
        piece = upload_piece(headers.get("Content-Length"), headers.get("Content-Range"), most)
        self.request.connection.set_max_body_size(max(piece.size, 1))  # type: ignore[union-attr]
        if self.get_argument("notebook", ""):
            if piece.offset or piece.size != piece.total:
                raise BadRequest(
                    "a notebook is saved whole, in one request: no Content-Range of a piece",
                    [FieldError("Content-Range", "the whole file, or none")],
                )
            self._notebook = True  # data_received keeps the body; put() parses it
            return
        pipe = self._pipe = BodyPipe()
        piece.chunks = pipe.chunks()
        backend = await self.backend()
        name, path = self.path_kwargs["name"], self.path_kwargs.get("path") or ""
        writing = self._writing = asyncio.ensure_future(backend.write_storage(name, path, piece))

        def done(future: asyncio.Future[UploadState]) -> None:
            pipe.close()
            if not future.cancelled():
                future.exception()  # seen here when no PUT is left to report it (a cut)

        writing.add_done_callback(done)

    async def data_received(self, chunk: bytes) -> None:
        if self._pipe is not None:
            await self._pipe.feed(chunk)
        else:
            self._body += chunk

    def on_connection_close(self) -> None:
        if self._pipe is not None and not self._finished:
            self._pipe.cut()
        super().on_connection_close()

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        exc = kwargs.get("exc_info", (None, None, None))[1]
        if isinstance(exc, OffsetConflict):
            self.set_header("Upload-Offset", str(exc.received))
        super().write_error(status_code, **kwargs)

    def log_exception(self, typ: Any, value: Any, tb: Any) -> None:
        if isinstance(value, (StreamClosedError, UploadCut)):
            self.log.info("jupyter-pai: upload to %s cut off by the client", self.request.path)
            return
        super().log_exception(typ, value, tb)

    def _json_body(self) -> dict[str, Any]:
        try:
            doc = json.loads(bytes(self._body) or b"{}")
        except ValueError as error:
            raise BadRequest(
                f"the body is not JSON: {error}", [FieldError("body", "not JSON")]
            ) from None
        if not isinstance(doc, dict):
            raise BadRequest(
                "the body must be a JSON object", [FieldError("body", "not an object")]
            )
        return doc

    # -- reads ---------------------------------------------------------------------------

    @web.authenticated
    @authorized("read")
    async def get(self, name: str, path: str = "") -> None:
        backend = await self.backend()
        if self.get_argument("upload", ""):
            self.send_json(await backend.upload_state(name, path or ""))
            return
        fmt = self.get_argument("archive", "")
        if fmt:
            if fmt not in ARCHIVE_TYPES:
                raise BadRequest(
                    f"archive {fmt!r} is not one of {', '.join(ARCHIVE_TYPES)}",
                    [FieldError("archive", f"one of {', '.join(ARCHIVE_TYPES)}")],
                )
            await self._send(await backend.archive_storage(name, path or "", fmt), fmt)
            return
        found = await backend.read_storage(name, path or "")
        if not isinstance(found, FileContent):
            self.send_json(found)
            return
        if self.get_argument("notebook", ""):
            # What a drive opens in JupyterLab: trusted only by the server's notary.
            data, trusted = await open_notebook(
                found, self.contents_manager.notary, self.pai.config.storage_piece_bytes, self.log
            )
            self.set_header("X-Notebook-Trusted", "true" if trusted else "false")
            found = FileContent(found.name, len(data), one_chunk(data), found.modified)
        await self._send(found)

    async def _send(self, found: FileContent, archive: str = "") -> None:
        kind = (
            ARCHIVE_TYPES[archive]
            if archive
            else mimetypes.guess_type(found.name)[0] or "application/octet-stream"
        )
        self.set_header("Content-Type", kind)
        if found.size is not None:
            self.set_header("Content-Length", str(found.size))
        if found.modified is not None:
            self.set_header("Last-Modified", found.modified)
        self.set_header("X-Content-Type-Options", "nosniff")
        attach = archive or self.get_argument("download", "")
        self.set_header(
            "Content-Disposition", _disposition("attachment" if attach else "inline", found.name)
        )
        try:
            async for chunk in found.chunks:
                self.write(chunk)
                await self.flush()
        except StreamClosedError:
            await found.chunks.aclose()  # type: ignore[attr-defined]
            return
        # APIHandler.finish() sets JSON unless told otherwise (seen for an empty file).
        self.finish(set_content_type=kind)

    # -- writes --------------------------------------------------------------------------

    @web.authenticated
    @authorized("write")
    async def put(self, name: str, path: str = "") -> None:
        if self._notebook:
            backend, notary = await self.backend(), self.contents_manager.notary
            body = bytes(self._body)
            self.send_json(await save_notebook(backend, name, path or "", body, notary, self.log))
            return
        assert self._pipe is not None and self._writing is not None  # made by prepare
        await self._pipe.end()
        self.send_json(await self._writing)

    @web.authenticated
    @authorized("write")
    async def post(self, name: str, path: str = "") -> None:
        kind = self._json_body().get("type")
        if kind != "directory":
            raise BadRequest(
                f'type {kind!r} cannot be made: POST {{"type": "directory"}} makes a '
                "folder; PUT uploads a file",
                [FieldError("type", "must be 'directory'")],
            )
        backend = await self.backend()
        self.send_json(await backend.make_folder(name, path or ""), status=201)

    @web.authenticated
    @authorized("write")
    async def patch(self, name: str, path: str = "") -> None:
        to = self._json_body().get("path")
        if not isinstance(to, str) or not to.strip("/"):
            raise BadRequest(
                'PATCH needs the new path: {"path": "folder/new-name"}',
                [FieldError("path", "the new path inside the same storage")],
            )
        backend = await self.backend()
        self.send_json(await backend.move_storage(name, path or "", to))

    @web.authenticated
    @authorized("write")
    async def delete(self, name: str, path: str = "") -> None:
        said = self.get_argument("recursive", "").strip().lower()
        if said not in TRUE + FALSE:
            raise BadRequest(
                f"recursive={said!r}: say true or false",
                [FieldError("recursive", "true or false")],
            )
        upload = self.get_argument("upload", "").strip().lower()
        if upload not in TRUE + FALSE:
            raise BadRequest(
                f"upload={upload!r}: say true or false",
                [FieldError("upload", "true or false")],
            )
        backend = await self.backend()
        await backend.delete_storage(
            name, path or "", recursive=said in TRUE, upload=upload in TRUE
        )
        self.set_status(204)
        self.finish()
