"""The embedded default backend: jobs as local processes, GPUs pinned per task."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import threading
from datetime import datetime
from pathlib import Path
from typing import Any

from jupyter_core.paths import jupyter_data_dir
from traitlets import Any as AnyTrait
from traitlets import Dict, Float, Unicode, default

from ... import __version__
from ...errors import BadRequest, Conflict, FieldError, NotFound, SpecError
from ...spec.protocol import JobProtocol
from ...spec.render import public_spec, secret_values
from .. import storage_fs
from ..base import Backend, FileContent, LogQuery, LogStream
from ..envcontract import port_requests
from ..logfiles import LogStart, begin_reading, stream_file, tail_offset
from ..logredaction import LogSecrets
from ..models import (
    Info,
    JobDetail,
    JobEvent,
    JobFilter,
    JobState,
    JobSummary,
    JobUtilisation,
    NodeResources,
    Resources,
    Storage,
    StorageListing,
    TaskState,
    TaskStatus,
    VirtualCluster,
)
from ..taskports import PortAddress
from ..utilisation import job_utilisation
from . import gpus
from .admission import SharedConfig, load_config, requeue_orphans, save_config, schedule
from .hostusage import HostUsage
from .listeners import PortOwners
from .nvml import NvmlGpus
from .processes import alive
from .records import JobRecord, TaskRecord, now
from .scheduler import vc_limit, vc_policies, vc_usage
from .store import StateStore

HOUSEKEEPING_SECONDS = 10.0


class LocalBackend(Backend):
    """Runs every task instance as a process group on this machine.

    State lives in :attr:`state_dir`, so the Jupyter server, the CLI and kernels share the
    same jobs, and running jobs survive a server restart."""

    name = "local"

    gpu_slots = AnyTrait(
        None,
        allow_none=True,
        help="""GPU slots to offer: a count (``4``: devices 0..3), a list of device ids
        (``"0,2"`` or ``["0", "2"]``), or None to detect GPUs with NVML / nvidia-smi.
        Declaring slots on a machine without GPUs is how demos, Binder and tests get
        a simulated multi-GPU machine. Default: $JUPYTER_PAI_LOCAL_GPUS.""",
    ).tag(config=True)

    @default("gpu_slots")
    def _default_gpu_slots(self) -> Any:
        return os.environ.get("JUPYTER_PAI_LOCAL_GPUS")

    state_dir = Unicode(
        help="""Where local jobs, logs and GPU allocations live. Every process using the same
        directory (server, CLI, kernels) sees the same jobs. Default: $JUPYTER_PAI_STATE_DIR,
        else ``<jupyter data dir>/pai``.""",
    ).tag(config=True)

    @default("state_dir")
    def _default_state_dir(self) -> str:
        return os.environ.get("JUPYTER_PAI_STATE_DIR") or os.path.join(jupyter_data_dir(), "pai")

    virtual_clusters_config = Dict(
        {"default": "100%"},
        config=True,
        help="""Virtual clusters as guaranteed shares of the local GPU slots, as on OpenPAI:
        ``{name: share}`` where a share is a GPU count (``2``), a fraction (``0.5``) or a
        percentage (``"50%"``); or ``{name: {"share": …, "borrow": bool, "lend": bool}}``.
        A VC that may ``borrow`` (default false) runs jobs bigger than its idle share on
        other VCs' idle GPUs; when a VC that ``lend``s (default true) needs them back for a
        job that fits its share, the borrowing job is preempted (its tasks stopped as by a
        stop) and requeued. A bare share is ``borrow: false, lend: true``.
        Example: ``{"a": {"share": "50%", "borrow": True}, "b": "50%"}``.""",
    )

    storages_config = Dict(
        config=True,
        help="""Storages users may browse and mount: ``{name: {"path": local folder,
        "mountPath": "/mnt/name", "readOnly": false, "description": "…"}}``.
        Default: one storage ``work``, the directory the server or CLI was started in.""",
    )

    @default("storages_config")
    def _default_storages(self) -> dict[str, Any]:
        return {"work": {"path": os.getcwd(), "mountPath": "/mnt/work"}}

    stop_grace_seconds = Float(
        10.0, config=True, help="Seconds between SIGTERM and SIGKILL when a job is stopped."
    )

    housekeeping = Float(
        HOUSEKEEPING_SECONDS,
        config=True,
        help="""Seconds between scheduling passes run by a long-lived process (the server),
        which notice a supervisor killed from outside. 0 turns them off (the CLI).""",
    )

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.store = StateStore(self.state_dir)
        self._port_owners = PortOwners()
        self.slots = self._slots()
        self.policies = vc_policies(self.virtual_clusters_config, len(self.slots))
        self.capacities = {name: p.guaranteed for name, p in self.policies.items()}
        self._summaries: dict[str, tuple[int, JobRecord]] = {}
        self._listed: tuple[str, list[JobSummary]] | None = None
        # One re-list at a time: clients that ask together (every open panel after a
        # change, or at a server's start) wait for it instead of each reading every record.
        self._relisting = threading.Lock()
        # Each record's summary, made again only when ``_read`` gave a new record.
        self._made: dict[str, tuple[JobRecord, JobSummary]] = {}
        self._secrets: dict[str, tuple[datetime, LogSecrets]] = {}
        self.nvml = NvmlGpus()
        self.host_usage = HostUsage()
        self._housekeeper: asyncio.Task[None] | None = None
        self._warming: asyncio.Future[list[JobSummary]] | None = None

    def _slots(self) -> list[str]:
        value = self.gpu_slots
        if value is None:
            return gpus.detect()
        if isinstance(value, int):
            return gpus.parse_declared(str(value))
        if isinstance(value, (list, tuple)):
            return [str(v) for v in value]
        return gpus.parse_declared(str(value))

    # -- life cycle ----------------------------------------------------------------------

    async def start(self) -> None:
        await asyncio.to_thread(self._start_sync)
        if self.housekeeping > 0:
            self._housekeeper = asyncio.create_task(self._housekeep())
        # Read every record once now, off the loop: the first listing otherwise costs the
        # first panels that open (about a second at 5,000 jobs), and all that wait behind it.
        self._warming = asyncio.ensure_future(asyncio.to_thread(self._listing))

    def _start_sync(self) -> None:
        with self.store.locked():
            config = SharedConfig.of(self.slots, self.policies, self.stop_grace_seconds)
            if load_config(self.store) != config:
                save_config(self.store, config)
            requeue_orphans(self.store)
            schedule(self.store)

    async def close(self) -> None:
        if self._warming is not None:
            with contextlib.suppress(Exception):  # a listing that fails fails again when asked
                await self._warming
        if self._housekeeper is not None:
            self._housekeeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._housekeeper

    async def _housekeep(self) -> None:
        while True:
            await asyncio.sleep(self.housekeeping)
            try:
                await asyncio.to_thread(self._locked_schedule)
            except Exception:  # keep the loop alive; the next pass may succeed
                self.log.exception("jupyter-pai: local scheduling pass failed")

    def _locked_schedule(self) -> None:
        with self.store.locked():
            schedule(self.store)

    # -- reads ---------------------------------------------------------------------------

    async def info(self) -> Info:
        return Info(
            backend=self.name, version=__version__, user=self.user, gpu_slots=len(self.slots)
        )

    def _read(self, job_id: str) -> JobRecord:
        # Plain strings, not Path objects: a listing stats every job's record.
        path = os.path.join(self.store.jobs_dir, job_id, "job.json")
        try:
            mtime = os.stat(path).st_mtime_ns
        except (OSError, ValueError):  # absent, or no possible name (too long, a NUL)
            raise NotFound(f"no job {job_id!r}") from None
        cached = self._summaries.get(job_id)
        # Only an ended job's record never changes again; file times are too coarse (a few
        # ms) to tell two quick writes of a running job's record apart.
        if cached and cached[0] == mtime and cached[1].state.terminal:
            return cached[1]
        rec = self.store.read_job(job_id)
        self._summaries[job_id] = (mtime, rec)
        return rec

    def _all(self) -> list[JobRecord]:
        records = []
        # Every directory but those being created (".new-…"); one without a record yet is
        # skipped by ``_read`` (NotFound), so no second stat per job here.
        for job_id in sorted(os.listdir(self.store.jobs_dir)):
            if job_id.startswith("."):
                continue
            with contextlib.suppress(NotFound, ValueError):
                records.append(self._read(job_id))
        return records

    async def jobs_version(self) -> str | None:
        return await asyncio.to_thread(self.store.generation)

    async def list_jobs(self, query: JobFilter | None = None) -> list[JobSummary]:
        jobs = await asyncio.to_thread(self._listing)
        if query is not None:
            jobs = [j for j in jobs if query.matches(j)]
        return list(jobs)

    def _listing(self) -> list[JobSummary]:
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
        made = self._made
        self._made = {
            r.id: made[r.id] if r.id in made and made[r.id][0] is r else (r, summary(r))
            for r in self._all()
        }
        jobs = sorted(
            (s for _, s in self._made.values()),
            key=lambda j: (j.submission_time, j.id),
            reverse=True,
        )
        self._listed = (generation, jobs)
        return jobs

    async def get_job(self, job_id: str) -> JobDetail:
        # One hop: the record, the spec and their validation off the loop together.
        return await asyncio.to_thread(self._detail, job_id)

    def _detail(self, job_id: str) -> JobDetail:
        rec = self._read(job_id)
        return detail(rec, JobProtocol.model_validate(self.store.read_spec(job_id)))

    def _secrets_of(self, rec: JobRecord) -> LogSecrets:
        """The job's secret values, to redact from its logs. A spec never changes once
        submitted, so they are read once per job (its submission time tells a job from a
        later one of the same name)."""
        known = self._secrets.get(rec.id)
        if known is not None and known[0] == rec.submission_time:
            return known[1]
        values = LogSecrets.of(
            secret_values(JobProtocol.model_validate(self.store.read_spec(rec.id)))
        )
        self._secrets[rec.id] = (rec.submission_time, values)
        return values

    async def virtual_clusters(self) -> list[VirtualCluster]:
        records = await asyncio.to_thread(self._all)
        cpus = float(os.cpu_count() or 1)
        memory = _memory_mb()
        usage = vc_usage(records, len(self.slots), self.policies)
        result = []
        for name, policy in self.policies.items():
            mine = [r for r in records if r.virtual_cluster == name]
            running = [r for r in mine if r.state in (JobState.RUNNING, JobState.STOPPING)]
            queued = [r for r in mine if r.state == JobState.WAITING]
            gpus = usage[name]
            used = Resources(
                gpu=gpus.used,
                cpu=sum(r.total_cpu for r in running),
                memory_mb=sum(r.total_memory_mb for r in running),
            )
            result.append(
                VirtualCluster(
                    name=name,
                    capacity=Resources(gpu=gpus.limit, cpu=cpus, memory_mb=memory),
                    used=used,
                    free=Resources(
                        gpu=gpus.free,
                        cpu=max(0.0, cpus - used.cpu),
                        memory_mb=max(0, memory - used.memory_mb),
                    ),
                    running_jobs=len(running),
                    queued_jobs=len(queued),
                    queued=Resources(
                        gpu=sum(r.total_gpus for r in queued),
                        cpu=sum(r.total_cpu for r in queued),
                        memory_mb=sum(r.total_memory_mb for r in queued),
                    ),
                    guaranteed_gpus=gpus.guaranteed,
                    borrowed_gpus=gpus.borrowed,
                    lent_gpus=gpus.lent,
                    may_borrow=policy.borrow,
                    may_lend=policy.lend,
                    description=self._describe(name),
                )
            )
        return result

    def _describe(self, name: str) -> str:
        policy = self.policies[name]
        text = f"{policy.guaranteed} of this machine's {len(self.slots)} GPU slots"
        if len(self.policies) == 1 and not policy.borrow:
            return text
        text += " guaranteed"
        if policy.borrow:
            text += "; borrows idle GPUs of other VCs (jobs on them may be preempted)"
        if not policy.lend:
            text += "; lends none"
        return text

    async def events(self, job_id: str) -> list[JobEvent]:
        await asyncio.to_thread(self._read, job_id)
        return await asyncio.to_thread(self.store.read_events, job_id)

    # -- submit and stop -----------------------------------------------------------------

    async def submit(self, job: JobProtocol, *, working_dir: str | None = None) -> JobDetail:
        self.check_runtime_plugins(job)
        self._check_fits(job)
        rec = new_record(job, self.user, working_dir or os.getcwd())
        await asyncio.to_thread(self._create, rec, job)
        return await self.get_job(rec.id)

    def _check_fits(self, job: JobProtocol) -> None:
        vc = job.virtual_cluster
        if vc not in self.capacities:
            raise SpecError(
                [
                    FieldError(
                        "defaults.virtualCluster",
                        f"no virtual cluster {vc!r} here; choose one of {', '.join(self.capacities)}",
                    )
                ]
            )
        need, capacity = job.total_gpus, vc_limit(vc, self.policies, len(self.slots))
        if need > capacity:
            role = next(r for r, s in job.task_roles.items() if s.resource_per_instance.gpu > 0)
            has = (
                f"can use at most {capacity} ({self.capacities[vc]} guaranteed, the rest borrowed)"
                if self.policies[vc].borrow
                else f"has only {capacity}"
            )
            raise SpecError(
                [
                    FieldError(
                        f"taskRoles.{role}.resourcePerInstance.gpu",
                        f"the job needs {need} GPUs at once but VC {vc} {has} "
                        "on this machine; ask for fewer GPUs or instances",
                    )
                ]
            )
        for i, mount in enumerate(job.extras.storages):
            if mount.name not in self.storages_config:
                raise SpecError(
                    [
                        FieldError(
                            f"extras.storages.{i}.name",
                            f"no storage {mount.name!r}; known: {', '.join(self.storages_config) or 'none'}",
                        )
                    ]
                )

    def _create(self, rec: JobRecord, job: JobProtocol) -> None:
        with self.store.locked():
            if self.store.exists(rec.id) or self.store.job_dir(rec.id).exists():
                raise Conflict(
                    f"job name {rec.name!r} is taken; choose another, e.g. {self._free_name(rec)!r}",
                    [FieldError("name", "is already used by another of your jobs")],
                )
            # As written (defaults are filled in again when read): what the job left unset
            # stays unset for the task's environment (PAI_RESOURCE_<role>'s shmMB).
            spec = job.model_dump(mode="json", by_alias=True, exclude_unset=True)
            self.store.create_job(rec, spec)
            self.store.write_active([*self.store.active_ids(), rec.id])
            self.store.add_event(
                rec.id, "Submitted", f"submitted to VC {rec.virtual_cluster} by {rec.user}"
            )
            schedule(self.store)

    def _free_name(self, rec: JobRecord) -> str:
        n = 2
        while self.store.job_dir(f"{rec.user}~{rec.name}-{n}").exists():
            n += 1
        return f"{rec.name}-{n}"

    async def stop_job(self, job_id: str) -> JobDetail:
        await asyncio.to_thread(self._stop, job_id)
        return await self.get_job(job_id)

    async def delete_job(self, job_id: str) -> None:
        await asyncio.to_thread(self._delete, job_id)

    def _delete(self, job_id: str) -> None:
        with self.store.locked():
            if not self.store.exists(job_id):
                raise NotFound(f"no job {job_id!r}")
            rec = self.store.read_job(job_id)
            if not rec.state.terminal:
                raise Conflict(f"job {job_id} is {rec.state.value}: stop it before deleting it")
            self.store.delete_job(job_id)

    def _stop(self, job_id: str) -> None:
        with self.store.locked():
            if not self.store.exists(job_id):
                raise NotFound(f"no job {job_id!r}")
            rec = self.store.read_job(job_id)
            if rec.state.terminal or rec.stop_requested:
                return
            rec.stop_requested = True
            self.store.stop_marker(job_id).touch()
            if rec.state == JobState.WAITING:
                rec.state = JobState.STOPPED
                rec.sub_state = "stopped while waiting"
                rec.waiting_reason = None
                rec.completed_time = now()
                for task in rec.tasks:
                    task.state = TaskState.STOPPED
                    task.exit_reason = "the job was stopped before it started"
                self.store.write_job(rec)
                self.store.add_event(job_id, "Stopped", "stopped before it started")
                schedule(self.store)
                return
            rec.state = JobState.STOPPING
            self.store.write_job(rec)
            self.store.add_event(job_id, "StopRequested", f"stop requested by {self.user}")
            if alive(rec.supervisor_pid, rec.supervisor_start) and rec.supervisor_pid:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(rec.supervisor_pid, signal.SIGTERM)
            elif rec.supervisor_pid:
                # Its supervisor is gone: nobody else would end it, so heal it now.
                schedule(self.store)

    # -- logs ----------------------------------------------------------------------------

    async def logs(self, job_id: str, query: LogQuery) -> LogStream:
        # One thread hop for everything before the first bytes: under load each hop waits
        # behind every other request's in the pool and wakes the loop again.
        role, path, size, start, secrets, begun = await asyncio.to_thread(
            self._log_start, job_id, query
        )

        async def finished() -> bool:
            current = await asyncio.to_thread(self.store.read_job, job_id)
            return current.state.terminal or current.task(role, query.index).state.terminal

        chunks = stream_file(
            path,
            offset=start,
            limit=query.limit,
            follow=query.follow and query.attempt is None,
            finished=finished,
            secrets=secrets,
            begun=begun,
        )
        return LogStream(size=size, chunks=chunks, role=role, index=query.index)

    def _log_start(
        self, job_id: str, query: LogQuery
    ) -> tuple[str, Path, int, int, LogSecrets, LogStart]:
        """The task's role, its log file, the file's size, the offset to start from, the
        job's secret values (to redact) and the file opened there with its first chunk read;
        or the error that refuses the request."""
        rec = self._read(job_id)
        role = query.role or rec.tasks[0].role
        try:
            rec.task(role, query.index)
        except KeyError:
            raise NotFound(f"job {job_id} has no task {role}-{query.index}") from None
        if query.offset is not None and query.offset < 0:
            raise BadRequest("offset must be ≥ 0")
        path = self.store.log_path(job_id, role, query.index, query.attempt)
        try:
            size = path.stat().st_size
        except FileNotFoundError:
            if query.attempt is not None:
                raise NotFound(
                    f"task {role}-{query.index} of job {job_id} has no attempt {query.attempt}"
                ) from None
            size = -1
        if query.offset is not None:
            start = min(query.offset, max(size, 0))
        elif query.tail is not None and size >= 0:
            start = tail_offset(path, query.tail)
        else:
            start = 0
        secrets = self._secrets_of(rec)
        begun = begin_reading(path, start, query.limit, secrets)
        return role, path, max(size, 0), start, secrets, begun

    # -- storage -------------------------------------------------------------------------

    async def storages(self) -> list[Storage]:
        return [
            Storage(
                name=name,
                mount_path=conf.get("mountPath", f"/mnt/{name}"),
                read_only=bool(conf.get("readOnly", False)),
                description=conf.get("description"),
            )
            for name, conf in self.storages_config.items()
        ]

    async def read_storage(self, name: str, path: str) -> StorageListing | FileContent:
        conf = self.storages_config.get(name)
        if conf is None:
            raise NotFound(f"no storage {name!r}")
        return await storage_fs.read_path(name, Path(str(conf["path"])), path)

    async def reach_port(self, job: JobDetail, task: TaskStatus, port: int) -> PortAddress:
        # Tasks are processes of this machine; their ports are on its loopback, where
        # any process may have taken one before the task's app listened.
        rec = await asyncio.to_thread(self.store.read_job, job.id)
        session = next((t.pid for t in rec.tasks if t.key == f"{task.role}-{task.index}"), None)
        if session is not None:
            where = f"task {task.role}-{task.index} of job {job.id}"
            await self._port_owners.check(port, session, where)
        return PortAddress(task.ip or "127.0.0.1", port)

    async def nodes(self) -> list[NodeResources]:
        # One node: this machine; its GPUs are the slots, requests the running tasks'.
        records = await asyncio.to_thread(self._all)
        holding = [r for r in records if r.state in (JobState.RUNNING, JobState.STOPPING)]
        job = {
            r.id: JobProtocol.model_validate(await asyncio.to_thread(self.store.read_spec, r.id))
            for r in holding
        }
        cpu = memory = 0.0
        for r in holding:
            for t in r.tasks:
                if not t.state.terminal:  # held from admission, as its GPUs are
                    res = job[r.id].task_roles[t.role].resource_per_instance
                    cpu += res.cpu
                    memory += res.memory_mb
        used = sum(len(r.allocated_gpus) for r in holding)
        cpu_percent, memory_percent = await asyncio.to_thread(self.host_usage.percentages)
        devices = await asyncio.to_thread(self.nvml.readings)
        gpu_percents = [r.percent for r in (devices or {}).values() if r.percent is not None]
        return [
            NodeResources(
                name=socket.gethostname(),
                gpu_total=len(self.slots),
                gpu_used=used,
                gpu_free=max(0, len(self.slots) - used),
                cpu_allocatable=float(os.cpu_count() or 1),
                cpu_requested=round(cpu, 3),
                memory_mb_allocatable=_memory_mb(),
                memory_mb_requested=int(memory),
                jobs=sorted(r.id for r in holding),
                cpu_percent=cpu_percent,
                memory_percent=memory_percent,
                # Simulated slots have nothing to measure: no figure, not 0 %.
                gpu_percent=round(sum(gpu_percents) / len(gpu_percents), 1)
                if gpu_percents
                else None,
            )
        ]

    async def utilisation(self, job_id: str) -> JobUtilisation:
        job = await self.get_job(job_id)
        devices = await asyncio.to_thread(self.nvml.readings)
        if devices is None:
            note = self.nvml.note or "no GPU measured"
            return job_utilisation(job, {}, source=None, note=f"{note}: nothing to measure")
        # Each task's GPUs are the device ids it was pinned to (CUDA_VISIBLE_DEVICES).
        readings = {
            (t.role, t.index): [devices[g] for g in t.gpus if g in devices] for t in job.tasks
        }
        return job_utilisation(job, readings, source="nvml")


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


def _memory_mb() -> int:
    with contextlib.suppress(OSError, ValueError, AttributeError):
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / (1024 * 1024))
    return 0
