"""The embedded default backend: jobs as local processes, GPUs pinned per task."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from datetime import datetime
from pathlib import Path
from typing import Any

from jupyter_core.paths import jupyter_data_dir
from traitlets import Any as AnyTrait
from traitlets import Bool, Dict, Float, Unicode, default

from ... import __version__
from ...errors import BadRequest, Conflict, FieldError, NotFound, SpecError
from ...spec.protocol import JobProtocol
from ...spec.render import secret_values
from .. import storage_fs
from ..base import Backend, ClientConnection, FileContent, LogQuery, LogStream, UploadPiece
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
    Storage,
    StorageEntry,
    StorageListing,
    TaskState,
    TaskStatus,
    UploadState,
    VirtualCluster,
)
from ..storage_writes import FolderWrites, is_read_only
from ..taskports import PortAddress
from ..utilisation import job_utilisation
from . import capacity, gpus, launcher
from .admission import (
    SharedConfig,
    Spawner,
    load_config,
    requeue_orphans,
    save_config,
    schedule,
    spawn_supervisor,
)
from .hostusage import HostUsage
from .jobviews import JobViews, new_record
from .listeners import PortOwners
from .nvml import NvmlGpus
from .processes import alive
from .records import JobRecord, now
from .scheduler import vc_limit, vc_policies
from .store import StateStore, is_full

HOUSEKEEPING_SECONDS = 10.0


class LocalBackend(Backend):
    """Runs every task instance as a process group on this machine.

    State lives in :attr:`state_dir`, so the Jupyter server, the CLI and kernels share the
    same jobs, and running jobs survive a server restart."""

    name = "local"
    tasks_run_here = True

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

    fork_supervisors = Bool(
        True,
        config=True,
        help="""Start each job's supervisor as a fork of a warm process this one keeps (a
        job starts tens of milliseconds sooner). Off where the process is short-lived (the
        CLI, a notebook's client): the supervisor then starts as a fresh Python.""",
    )

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.store = StateStore(self.state_dir)
        self._port_owners = PortOwners()
        self.slots = self._slots()
        self.policies = vc_policies(self.virtual_clusters_config, len(self.slots))
        self.capacities = {name: p.guaranteed for name, p in self.policies.items()}
        self.views = JobViews(self.store)
        self._secrets: dict[str, tuple[datetime, LogSecrets]] = {}
        self.nvml = NvmlGpus()
        self.host_usage = HostUsage()
        self._housekeeper: asyncio.Task[None] | None = None
        self._launcher = launcher.shared() if self.fork_supervisors else None
        self._spawn: Spawner = self._launcher.spawn if self._launcher else spawn_supervisor
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
        if self._launcher is not None:
            await asyncio.to_thread(self._launcher.start)
        await asyncio.to_thread(self._start_sync)
        if self.housekeeping > 0:
            self._housekeeper = asyncio.create_task(self._housekeep())
        # Read every record once now, off the loop: the first listing otherwise costs the
        # first panels that open (about a second at 5,000 jobs), and all that wait behind it.
        self._warming = asyncio.ensure_future(asyncio.to_thread(self.views.listing))

    def _start_sync(self) -> None:
        with self.store.locked():
            config = SharedConfig.of(self.slots, self.policies, self.stop_grace_seconds)
            if load_config(self.store) != config:
                save_config(self.store, config)
            requeue_orphans(self.store)
            schedule(self.store, self._spawn)

    async def close(self) -> None:
        if self._warming is not None:
            with contextlib.suppress(Exception):  # a listing that fails fails again when asked
                await self._warming
        if self._housekeeper is not None:
            self._housekeeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._housekeeper
        if self._launcher is not None:
            await asyncio.to_thread(self._launcher.close)

    async def _housekeep(self) -> None:
        while True:
            await asyncio.sleep(self.housekeeping)
            try:
                await asyncio.to_thread(self._locked_schedule)
            except Exception:  # keep the loop alive; the next pass may succeed
                self.log.exception("jupyter-pai: local scheduling pass failed")

    def _locked_schedule(self) -> None:
        with self.store.locked():
            schedule(self.store, self._spawn)

    # -- reads ---------------------------------------------------------------------------

    async def info(self) -> Info:
        return Info(
            backend=self.name,
            version=__version__,
            user=self.user,
            gpu_slots=len(self.slots),
            tasks_run_here=self.tasks_run_here,
        )

    async def virtual_clusters(self) -> list[VirtualCluster]:
        records = await asyncio.to_thread(self.views.all)
        return capacity.virtual_clusters(records, len(self.slots), self.policies)

    async def events(self, job_id: str) -> list[JobEvent]:
        await asyncio.to_thread(self.views.read, job_id)
        return await asyncio.to_thread(self.store.read_events, job_id)

    async def jobs_version(self) -> str | None:
        return await asyncio.to_thread(self.store.generation)

    async def list_jobs(self, query: JobFilter | None = None) -> list[JobSummary]:
        jobs = await asyncio.to_thread(self.views.listing)
        if query is not None:
            jobs = [j for j in jobs if query.matches(j)]
        return list(jobs)

    async def get_job(self, job_id: str) -> JobDetail:
        # One hop: the record, the spec and their validation off the loop together.
        return await asyncio.to_thread(self.views.detail, job_id)

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
            with self.store.room():
                self.store.create_job(rec, spec)
                try:
                    self.store.write_active([*self.store.active_ids(), rec.id])
                except BaseException:
                    self.store.delete_job(rec.id)  # not active: it would never run
                    raise
            # The job is submitted; with no room for its event or a start, housekeeping
            # starts it once there is.
            try:
                self.store.add_event(
                    rec.id, "Submitted", f"submitted to VC {rec.virtual_cluster} by {rec.user}"
                )
                schedule(self.store, self._spawn)
            except OSError as error:
                if not is_full(error):
                    raise
                self.log.warning("the state directory is full: job %s waits for room", rec.id)

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
                schedule(self.store, self._spawn)
                return
            rec.state = JobState.STOPPING
            self.store.write_job(rec)
            self.store.add_event(job_id, "StopRequested", f"stop requested by {self.user}")
            if alive(rec.supervisor_pid, rec.supervisor_start) and rec.supervisor_pid:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(rec.supervisor_pid, signal.SIGTERM)
            elif rec.supervisor_pid:
                # Its supervisor is gone: nobody else would end it, so heal it now.
                schedule(self.store, self._spawn)

    # -- logs ----------------------------------------------------------------------------

    async def logs(
        self, job_id: str, query: LogQuery, connection: ClientConnection | None = None
    ) -> LogStream:
        # A local follow is read from a file: it stays in this process (``connection`` unused).
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
        rec = self.views.read(job_id)
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
                read_only=is_read_only(conf),
                description=conf.get("description"),
            )
            for name, conf in self.storages_config.items()
        ]

    async def read_storage(self, name: str, path: str) -> StorageListing | FileContent:
        conf = self.storages_config.get(name)
        if conf is None:
            raise NotFound(f"no storage {name!r}")
        return await storage_fs.read_path(name, Path(str(conf["path"])), path, self.storage_rules())

    def _writes(self, name: str, write: bool = True) -> FolderWrites:
        return FolderWrites.configured(self.storages_config, name, write, self.storage_rules())

    def private_folders(self) -> dict[str, str]:
        # Job specs with their secrets in clear, logs unredacted, the GPU allocations.
        return {**super().private_folders(), self.state_dir: "jupyter-pai's state directory"}

    async def write_storage(self, name: str, path: str, piece: UploadPiece) -> UploadState:
        return await self._writes(name).write(path, piece)

    async def upload_state(self, name: str, path: str) -> UploadState:
        return await self._writes(name).upload_state(path)

    async def make_folder(self, name: str, path: str) -> StorageEntry:
        return await self._writes(name).make_folder(path)

    async def move_storage(self, name: str, path: str, to: str) -> StorageEntry:
        return await self._writes(name).move(path, to)

    async def delete_storage(
        self, name: str, path: str, recursive: bool = False, upload: bool = False
    ) -> None:
        await self._writes(name).delete(path, recursive, upload)

    async def archive_storage(self, name: str, path: str, fmt: str) -> FileContent:
        return await self._writes(name, write=False).archive(path, fmt)

    def storage_folder(self, name: str) -> str | None:
        path = self.storages_config.get(name, {}).get("path")
        return os.path.realpath(str(path)) if path else None

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
        records = await asyncio.to_thread(self.views.all)
        holding = [r for r in records if r.state in capacity.HOLDING]
        specs = {
            r.id: JobProtocol.model_validate(await asyncio.to_thread(self.store.read_spec, r.id))
            for r in holding
        }
        cpu_percent, memory_percent = await asyncio.to_thread(self.host_usage.percentages)
        devices = await asyncio.to_thread(self.nvml.readings)
        gpu_percents = [r.percent for r in (devices or {}).values() if r.percent is not None]
        node = capacity.this_node(
            holding,
            specs,
            len(self.slots),
            cpu_percent=cpu_percent,
            memory_percent=memory_percent,
            gpu_percents=gpu_percents,
        )
        return [node]

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
