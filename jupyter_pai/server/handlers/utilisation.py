"""``GET jobs/{id}/utilisation``: GPU use per task and for the job, now and over the last
hour. A source that cannot answer (no GPU, Prometheus down) is a note, not an error."""

from __future__ import annotations

from pydantic import BaseModel

from ...backends.base import Backend
from .base import ReadHandler


class JobUtilisationHandler(ReadHandler):
    async def read(self, backend: Backend, job_id: str) -> BaseModel:
        return await backend.utilisation(job_id)
