"""``POST convert``: a job in any accepted form (protocol v2, the short form, OpenPAI v1
JSON) validated and returned as the protocol-v2 document it stands for, without
submitting it. The panel imports v1 job files through it, so one converter serves all."""

from __future__ import annotations

from tornado import web

from ...backends.models import ConvertResult, FieldWarning
from ...spec.hidden import HIDDEN
from .base import PAIHandler, authorized


class ConvertHandler(PAIHandler):
    @web.authenticated
    # Nothing is made, but it is write: it takes a submission's body and runs the parser on
    # it for a user who, allowed only to read, has no job to submit.
    @authorized("write")
    async def post(self) -> None:
        parsed = await self.parsed_job()
        job = dict(parsed.document)
        if isinstance(job.get("secrets"), dict):
            job["secrets"] = {key: HIDDEN for key in job["secrets"]}
        self.send_json(
            ConvertResult(
                format=parsed.format,
                job=job,
                warnings=[FieldWarning.model_validate(w.to_json()) for w in parsed.warnings],
            )
        )
