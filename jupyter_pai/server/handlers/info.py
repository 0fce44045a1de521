"""``GET info``, ``GET images`` and ``GET schema``: what the UI needs before anything else."""

from __future__ import annotations

from tornado import web

from ...backends.models import Image, ImageList
from ...spec.schema import job_schema
from .base import PAIHandler, authorized


class InfoHandler(PAIHandler):
    @web.authenticated
    @authorized("read")
    async def get(self) -> None:
        backend = await self.backend()
        self.send_json(await backend.info())


class ImagesHandler(PAIHandler):
    @web.authenticated
    @authorized("read")
    async def get(self) -> None:
        self.send_json(ImageList(items=[Image.model_validate(i) for i in self.pai.config.images]))


class SchemaHandler(PAIHandler):
    @web.authenticated
    @authorized("read")
    async def get(self) -> None:
        self.send_json(job_schema())
