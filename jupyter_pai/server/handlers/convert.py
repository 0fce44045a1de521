"""``POST convert``: a job in any accepted form (protocol v2, the short form, OpenPAI v1
JSON) validated and returned as the protocol-v2 document it stands for, without
submitting it. The panel imports v1 job files through it, so one converter serves all."""

from __future__ import annotations

from tornado import web

from ...backends.models import ConvertResult, FieldWarning
from ...spec.parse import parse_job
from ...spec.render import HIDDEN
from .base import PAIHandler


class ConvertHandler(PAIHandler):
    @web.authenticated
    async def post(self) -> None:
        parsed = parse_job(self.job_source())
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
