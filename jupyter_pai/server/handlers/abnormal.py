"""``GET abnormal-jobs``: running jobs OpenPAI's rule flags (too long, idle GPUs), with
why and whether this user may stop them (``DELETE jobs/{id}`` does)."""

from __future__ import annotations

from tornado import web

from ...backends.models import AbnormalJobList
from .base import PAIHandler, authorized


class AbnormalJobsHandler(PAIHandler):
    @web.authenticated
    @authorized("read")
    async def get(self) -> None:
        backend = await self.backend()
        self.send_json(AbnormalJobList(items=await backend.abnormal_jobs()))
