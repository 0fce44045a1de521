"""``jobs``: list, submit, detail, stop and events."""

from __future__ import annotations

from tornado import web

from ...backends.models import (
    FieldWarning,
    JobEventList,
    JobFilter,
    JobList,
    JobState,
    SubmitResult,
)
from ...errors import BadRequest, FieldError
from ...spec.parse import parse_job
from .base import PAIHandler


class JobsHandler(PAIHandler):
    @web.authenticated
    async def get(self) -> None:
        states = [s for v in self.get_arguments("state") for s in v.split(",") if s]
        try:
            parsed_states = [JobState(s.upper()) for s in states] or None
        except ValueError:
            raise BadRequest(
                f"state must be one of {', '.join(s.value for s in JobState)}",
                [FieldError("state", f"unknown state in {states!r}")],
            ) from None
        query = JobFilter(
            vc=self.get_argument("vc", None),
            state=parsed_states,
            user=self.get_argument("user", None),
            keyword=self.get_argument("keyword", None),
        )
        backend = await self.backend()
        self.send_json(JobList(items=await backend.list_jobs(query)))

    @web.authenticated
    async def post(self) -> None:
        parsed = parse_job(self.job_source(), virtual_cluster=self.get_argument("vc", None))
        backend = await self.backend()
        job = await backend.submit(parsed.job, working_dir=self.pai.working_dir)
        warnings = parsed.warnings + backend.submission_warnings(parsed.job)
        self.set_header("Location", self.request.path.rstrip("/") + "/" + job.id)
        self.send_json(
            SubmitResult(
                job=job, warnings=[FieldWarning.model_validate(w.to_json()) for w in warnings]
            ),
            status=201,
        )


class JobHandler(PAIHandler):
    @web.authenticated
    async def get(self, job_id: str) -> None:
        backend = await self.backend()
        self.send_json(await backend.get_job(job_id))

    @web.authenticated
    async def delete(self, job_id: str) -> None:
        backend = await self.backend()
        self.send_json(await backend.stop_job(job_id))


class JobEventsHandler(PAIHandler):
    @web.authenticated
    async def get(self, job_id: str) -> None:
        backend = await self.backend()
        self.send_json(JobEventList(items=await backend.events(job_id)))
