"""Jobs as the API shows them, from the records in the state directory: summaries for
listings (cached, made again only for records that changed) and details."""

from __future__ import annotations

import bisect
import contextlib
import os
import threading
from datetime import datetime

from ...errors import NotFound
from ...spec.protocol import JobProtocol
from ...spec.render import public_spec
from ..envcontract import port_requests
from ..models import JobDetail, JobSummary, TaskStatus
from .records import JobRecord, TaskRecord
from .store import StateStore


class JobViews:
    """Reads of the store's records, cached between reads while the store is unchanged."""

    def __init__(self, store: StateStore) -> None:
        self.store = store
        self._records: dict[str, tuple[int, JobRecord]] = {}
        self._listed: tuple[str, list[JobSummary]] | None = None
        # One re-list at a time: clients that ask together (every open panel after a
        # change, or at a server's start) wait for it instead of each reading every record.
        self._relisting = threading.Lock()
        # Each record's summary, made again only when ``read`` gave a new record.
        self._made: dict[str, tuple[JobRecord, JobSummary]] = {}
        # The summaries oldest first, with their sort keys; and where in the store's change
        # journal they were last brought up to date.
        self._keys: list[tuple[datetime, str]] = []
        self._order: list[JobSummary] = []
        self._journal: tuple[int, int] | None = None

    def read(self, job_id: str) -> JobRecord:
        # Plain strings, not Path objects: a listing stats every job's record.
        path = os.path.join(self.store.jobs_dir, job_id, "job.json")
        try:
            mtime = os.stat(path).st_mtime_ns
        except (OSError, ValueError):  # absent, or no possible name (too long, a NUL)
            raise NotFound(f"no job {job_id!r}") from None
        cached = self._records.get(job_id)
        # Only an ended job's record never changes again; file times are too coarse (a few
        # ms) to tell two quick writes of a running job's record apart.
        if cached and cached[0] == mtime and cached[1].state.terminal:
            return cached[1]
        rec = self.store.read_job(job_id)
        self._records[job_id] = (mtime, rec)
        return rec

    def all(self) -> list[JobRecord]:
        records = []
        # Every directory but those being created (".new-…"); one without a record yet is
        # skipped by ``read`` (NotFound), so no second stat per job here.
        for job_id in sorted(os.listdir(self.store.jobs_dir)):
            if job_id.startswith("."):
                continue
            with contextlib.suppress(NotFound, ValueError):
                records.append(self.read(job_id))
        return records

    def listing(self) -> list[JobSummary]:
        """Every job's summary, newest first; read again only when the store's generation
        moved (taken first, so the cached list is never older than its tag)."""
        generation = self.store.generation()
        listed = self._listed
        if listed is not None and listed[0] == generation:
            return listed[1]
        with self._relisting:
            listed = self._listed
            if listed is not None and listed[0] == generation:
                return listed[1]  # made meanwhile by the request this one waited for
            return self._relist(generation)

    def _relist(self, generation: str) -> list[JobSummary]:
        """The records the change journal names read again, or all of them where it
        cannot say (the first listing, a rotated journal)."""
        ids, self._journal = self.store.changes_since(self._journal)
        if ids is None or self._listed is None:
            self._relist_all()
        else:
            for job_id in ids:
                self._update(job_id)
        jobs = self._order[::-1]
        self._listed = (generation, jobs)
        return jobs

    def _relist_all(self) -> None:
        made = self._made
        self._made = {
            r.id: made[r.id] if r.id in made and made[r.id][0] is r else (r, summary(r))
            for r in self.all()
        }
        pairs = sorted(((s.submission_time, s.id), s) for _, s in self._made.values())
        self._keys = [k for k, _ in pairs]
        self._order = [s for _, s in pairs]

    def _update(self, job_id: str) -> None:
        """One record changed, was made or deleted: its summary in place, in order."""
        try:
            rec: JobRecord | None = self.read(job_id)
        except (NotFound, ValueError):
            rec = None
        old = self._made.pop(job_id, None)
        if old is not None:
            at = bisect.bisect_left(self._keys, (old[1].submission_time, old[1].id))
            if at < len(self._keys) and self._keys[at][1] == job_id:
                del self._keys[at]
                del self._order[at]
        if rec is None:
            self._records.pop(job_id, None)
            return
        made = old if old is not None and old[0] is rec else (rec, summary(rec))
        self._made[job_id] = made
        key = (made[1].submission_time, made[1].id)
        at = bisect.bisect_left(self._keys, key)
        self._keys.insert(at, key)
        self._order.insert(at, made[1])

    def detail(self, job_id: str) -> JobDetail:
        rec = self.read(job_id)
        return detail(rec, JobProtocol.model_validate(self.store.read_spec(job_id)))


def new_record(job: JobProtocol, user: str, working_dir: str) -> JobRecord:
    tasks = [
        TaskRecord(
            role=role,
            index=i,
            gpu_request=spec.resource_per_instance.gpu,
            port_request=port_requests(job, role),
        )
        for role, spec in job.task_roles.items()
        for i in range(spec.instances)
    ]
    return JobRecord(
        id=f"{user}~{job.name}",
        name=job.name,
        user=user,
        virtual_cluster=job.virtual_cluster,
        kind=job.extras.kind,
        total_gpus=job.total_gpus,
        total_tasks=len(tasks),
        total_roles=len(job.task_roles),
        total_cpu=sum(s.instances * s.resource_per_instance.cpu for s in job.task_roles.values()),
        total_memory_mb=sum(
            s.instances * s.resource_per_instance.memory_mb for s in job.task_roles.values()
        ),
        working_dir=working_dir,
        tasks=tasks,
    )


def summary(rec: JobRecord) -> JobSummary:
    return JobSummary(
        id=rec.id,
        name=rec.name,
        user=rec.user,
        state=rec.state,
        sub_state=rec.sub_state,
        virtual_cluster=rec.virtual_cluster,
        kind=rec.kind,
        retries=rec.retries,
        submission_time=rec.submission_time,
        launched_time=rec.launched_time,
        completed_time=rec.completed_time,
        exit_code=rec.exit_code,
        total_gpu_number=rec.total_gpus,
        total_task_number=rec.total_tasks,
        total_task_role_number=rec.total_roles,
        waiting_reason=rec.waiting_reason,
    )


def detail(rec: JobRecord, job: JobProtocol) -> JobDetail:
    tasks = [
        TaskStatus(
            role=t.role,
            index=t.index,
            state=t.state,
            node="localhost",
            ip="127.0.0.1" if t.started_time else None,
            gpu_number=t.gpu_request,
            gpus=t.gpus,
            ports=t.ports,
            exit_code=t.exit_code,
            exit_reason=t.exit_reason,
            retries=t.retries,
            started_time=t.started_time,
            completed_time=t.completed_time,
        )
        for t in rec.tasks
    ]
    return JobDetail(**summary(rec).model_dump(), spec=public_spec(job), tasks=tasks)
