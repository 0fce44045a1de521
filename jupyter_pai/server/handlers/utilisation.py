"""``GET jobs/{id}/utilisation``: GPU use per task and for the job, now and over the last
hour. A source that cannot answer (no GPU, Prometheus down) is a note, not an error."""

from __future__ import annotations

from tornado import web

from .base import PAIHandler, authorized


class JobUtilisationHandler(PAIHandler):
    @web.authenticated
    @authorized("read")
    async def get(self, job_id: str) -> None:
        backend = await self.backend()
        self.send_json(await backend.utilisation(job_id))
