"""``GET storage`` and ``GET storage/{name}/{path}``: a folder as JSON, a file as its bytes."""

from __future__ import annotations

import mimetypes

from pydantic import BaseModel
from tornado import web
from tornado.iostream import StreamClosedError

from ...backends.base import Backend, FileContent
from ...backends.models import StorageList
from .base import PAIHandler, ReadHandler, authorized


class StoragesHandler(ReadHandler):
    async def read(self, backend: Backend) -> BaseModel:
        return StorageList(items=await backend.storages())


class StorageHandler(PAIHandler):
    @web.authenticated
    @authorized("read")
    async def get(self, name: str, path: str = "") -> None:
        backend = await self.backend()
        found = await backend.read_storage(name, path or "")
        if not isinstance(found, FileContent):
            self.send_json(found)
            return
        kind = mimetypes.guess_type(found.name)[0] or "application/octet-stream"
        self.set_header("Content-Type", kind)
        self.set_header("Content-Length", str(found.size))
        self.set_header("X-Content-Type-Options", "nosniff")
        disposition = "attachment" if self.get_argument("download", "") else "inline"
        self.set_header("Content-Disposition", f'{disposition}; filename="{found.name}"')
        try:
            async for chunk in found.chunks:
                self.write(chunk)
                await self.flush()
        except StreamClosedError:
            return
        # APIHandler.finish() sets JSON unless told otherwise (seen for an empty file).
        self.finish(set_content_type=kind)
