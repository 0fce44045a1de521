"""``jobs``: list, submit, detail, stop and events."""

from __future__ import annotations

import hashlib
import secrets

from tornado import web

from ...backends.jobpages import page, parse_page
from ...backends.models import JobEventList, JobFilter, JobState
from ...errors import BadRequest, FieldError
from ...submission.jobs import submit_job
from .base import PAIHandler, authorized

#: Mixed into every ETag: a restarted server (whose counters start again) never matches
#: a tag the previous one gave.
_BOOT = secrets.token_hex(8)


class JobsHandler(PAIHandler):
    @web.authenticated
    @authorized("read")
    async def get(self) -> None:
        query = self._filter()
        paging = parse_page(self.get_argument("limit", None), self.get_argument("continue", None))
        backend = await self.backend()
        version = await backend.jobs_version()
        if version is not None:
            # Taken before listing, so the tag is never newer than the list it goes with.
            self.set_header("ETag", self._etag(version, backend.user))
            if self.check_etag_header():
                self.set_status(304)
                self.finish()
                return
        # Without a version tornado tags the body itself (and answers 304 after listing).
        unfiltered = query == JobFilter()  # skip 5,000 calls that would all say yes
        self.send_json(page(await backend.list_jobs(None if unfiltered else query), paging))

    def _etag(self, version: str, backend_user: str) -> str:
        """Changes with the jobs (``version``), the query (filters, page) and the user the
        backend lists for. Not the request's identity: the list does not depend on it, and
        a bare token gets a fresh anonymous name on every request (no 304 would ever come)."""
        args = sorted((k, v.decode()) for k, vs in self.request.arguments.items() for v in vs)
        key = repr((_BOOT, version, backend_user, args)).encode()
        return '"' + hashlib.blake2b(key, digest_size=16).hexdigest() + '"'

    def _filter(self) -> JobFilter:
        states = [s for v in self.get_arguments("state") for s in v.split(",") if s]
        try:
            parsed_states = [JobState(s.upper()) for s in states] or None
        except ValueError:
            raise BadRequest(
                f"state must be one of {', '.join(s.value for s in JobState)}",
                [FieldError("state", f"unknown state in {states!r}")],
            ) from None
        return JobFilter(
            vc=self.get_argument("vc", None),
            state=parsed_states,
            user=self.get_argument("user", None),
            keyword=self.get_argument("keyword", None),
        )

    @web.authenticated
    @authorized("write")
    async def post(self) -> None:
        parsed = await self.parsed_job(virtual_cluster=self.get_argument("vc", None))
        result = await submit_job(
            await self.backend(),
            parsed,
            working_dir=self.pai.working_dir,
            images=await self.pai.image_policy(),
        )
        self.set_header("Location", self.request.path.rstrip("/") + "/" + result.job.id)
        self.send_json(result, status=201)


class JobHandler(PAIHandler):
    @web.authenticated
    @authorized("read")
    async def get(self, job_id: str) -> None:
        backend = await self.backend()
        self.send_json(await backend.get_job(job_id))

    @web.authenticated
    @authorized("write")
    async def delete(self, job_id: str) -> None:
        backend = await self.backend()
        self.send_json(await backend.stop_job(job_id))


class JobEventsHandler(PAIHandler):
    @web.authenticated
    @authorized("read")
    async def get(self, job_id: str) -> None:
        backend = await self.backend()
        self.send_json(JobEventList(items=await backend.events(job_id)))
