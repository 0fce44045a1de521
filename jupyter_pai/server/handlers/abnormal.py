"""``GET abnormal-jobs``: running jobs OpenPAI's rule flags (too long, idle GPUs), with
why and whether this user may stop them (``DELETE jobs/{id}`` does)."""

from __future__ import annotations

from pydantic import BaseModel

from ...backends.base import Backend
from ...backends.models import AbnormalJobList
from .base import ReadHandler


class AbnormalJobsHandler(ReadHandler):
    async def read(self, backend: Backend) -> BaseModel:
        return AbnormalJobList(items=await backend.abnormal_jobs())
