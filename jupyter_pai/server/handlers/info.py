"""``GET info``, ``GET images`` and ``GET schema``: what the UI needs before anything else."""

from __future__ import annotations

from tornado import web

from ...spec.schema import job_schema
from ...submission.images import image_choices
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
        policy = await self.pai.image_policy()
        self.send_json(await image_choices(policy, await self.backend()))


class SchemaHandler(PAIHandler):
    @web.authenticated
    @authorized("read")
    async def get(self) -> None:
        self.send_json(job_schema())
