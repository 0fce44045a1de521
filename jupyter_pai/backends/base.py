"""The one async interface every backend implements; the server, CLI, magics and kernel
provisioner are thin shells over it."""

from __future__ import annotations

import abc
import asyncio
import getpass
import os
import socket
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from jupyter_core.paths import jupyter_runtime_dir
from traitlets import Bool, Dict, Float, Unicode, default, validate
from traitlets.config import LoggingConfigurable

from .. import runtime
from ..errors import FieldError, NotFound, SpecError, Unavailable
from ..spec.protocol import JobProtocol
from .abnormal import abnormal_reasons
from .models import (
    AbnormalJob,
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
    TaskStatus,
    UploadState,
    VirtualCluster,
)
from .selfcheck import SelfCheck, nothing_to_check
from .storage_walk import Rules
from .taskports import PortAddress, parse_port, resolve


def hub_user(asked: str | None, where: str) -> str | None:
    """Under JupyterHub, the user the hub signed in ($JUPYTERHUB_USER): jobs, kernels and
    storage helpers are theirs. A different name in ``where`` is refused rather than
    obeyed (it would act under another's name) or silently ignored."""
    signed_in = os.environ.get("JUPYTERHUB_USER")
    if not signed_in:
        return None
    if asked and asked != signed_in:
        raise ValueError(
            f"{where} is {asked!r} but JupyterHub signed in {signed_in!r} ($JUPYTERHUB_USER); "
            f"under JupyterHub jobs are always the signed-in user's: unset {where}"
        )
    return signed_in


@dataclass(frozen=True)
class LogQuery:
    """Which part of a task's log to read.

    ``tail`` = last N lines; ``offset``/``limit`` = a byte range (what the UI's virtualised
    viewer asks for); ``follow`` keeps streaming until the task ends."""

    role: str | None = None
    index: int = 0
    follow: bool = False
    tail: int | None = None
    offset: int | None = None
    limit: int | None = None
    attempt: int | None = None


@dataclass(frozen=True)
class ClientConnection:
    """A follower's own connection (plain HTTP/1.1, nothing sent on it yet), offered to a
    backend that can write the follow to it from another process, so that its first bytes
    do not wait for this one's busy loop. ``head(role, index)``: the response's head for
    the task followed, to send first; the log then goes in HTTP's chunked encoding, and
    the connection is closed at its end."""

    socket: socket.socket
    head: Callable[[str, int], bytes]


@dataclass
class LogStream:
    """A task's log: its size when opened (bytes) and the chunks to send. ``taken``: the
    follow is being written to the :class:`ClientConnection` offered (``chunks`` is
    empty), and nothing more may be sent on that connection here."""

    size: int
    chunks: AsyncIterator[bytes]
    role: str
    index: int
    taken: bool = False


@dataclass
class FileContent:
    """A file in a storage (or a folder's archive made as it is sent): its size (None:
    not known before the end) and content chunks."""

    name: str
    size: int | None
    chunks: AsyncIterator[bytes]
    modified: datetime | None = None


@dataclass
class UploadPiece:
    """Bytes ``offset`` to ``offset + size`` of a file ``total`` bytes long (a request's
    ``Content-Range``; a whole file in one piece has offset 0 and total == size)."""

    offset: int
    size: int
    total: int
    chunks: AsyncIterator[bytes]


class PortForwarding(Protocol):
    """A task's ports on this machine as Unix sockets ``{prefix}-{port}`` (the way
    jupyter_client names ``ipc`` channels), open until :meth:`close`."""

    prefix: str

    async def reset(self) -> None:
        """Drop open streams (the program behind them was restarted); new connections
        reach the new one."""

    async def close(self) -> None: ...


class Backend(LoggingConfigurable):
    """Jobs, virtual clusters, logs, events and storage for one user.

    Abstract (``abc.abstractmethod`` marks what subclasses implement); traitlets' metaclass
    rules out ``abc.ABC`` as a base."""

    name: str = "abstract"
    #: Whether a task is a process on this machine (same files, same Python, ports on
    #: this machine's loopback) rather than a container somewhere in a cluster.
    tasks_run_here: bool = False

    user = Unicode(
        help="""The user jobs are submitted as (OpenPAI's ``PAI_USER_NAME``); default:
        $JUPYTER_PAI_USER, else the operating-system user. Under JupyterHub always the
        signed-in user ($JUPYTERHUB_USER): another name here is refused.""",
    ).tag(config=True)

    @default("user")
    def _default_user(self) -> str:
        env = os.environ.get("JUPYTER_PAI_USER")
        return hub_user(env, "$JUPYTER_PAI_USER") or env or getpass.getuser()

    @validate("user")
    def _validate_user(self, proposal: Any) -> str:
        return hub_user(proposal["value"], "Backend.user") or str(proposal["value"])

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.user  # noqa: B018 - resolved now, so a conflicting name stops the start

    abnormal_running_days = Float(
        5.0, help="A job running longer than this many days is abnormal (OpenPAI's rule)."
    ).tag(config=True)
    abnormal_gpu_percent = Float(
        10.0,
        help="""A GPU job whose mean GPU utilisation over the last hour is under this (%) is
        abnormal; only where utilisation is measured.""",
    ).tag(config=True)
    abnormal_grace_minutes = Float(
        10.0,
        help="""A job is judged on its GPU use only after running this long (a job that has
        just started is often still loading data).""",
    ).tag(config=True)

    storage_allow_hidden = Bool(
        False,
        help="""Whether storages list, serve, archive and write hidden files and folders (a
        name starting with "."). In the Jupyter server the server's
        ``ContentsManager.allow_hidden`` decides (default off, as Jupyter's file browser):
        a read-only user must not read ``.ssh`` or ``.local`` of a storage that is someone's
        home. Elsewhere (the CLI, a notebook's own backend) this setting.""",
    ).tag(config=True)
    storage_never_served = Dict(
        key_trait=Unicode(),
        value_trait=Unicode(),
        help="""Folders no storage serves, nor anything in them, hidden or not, wherever a
        storage's root lies: ``{path: what it is}`` (said in the refusal). Always added:
        the Jupyter runtime directory (the server's token) and the backend's own state.""",
    ).tag(config=True)

    def storage_rules(self) -> Rules:
        """What every storage serves: hidden files as :attr:`storage_allow_hidden` says,
        never the folders of :meth:`private_folders`."""
        return Rules(hidden=self.storage_allow_hidden, protected=self.private_folders())

    def private_folders(self) -> dict[str, str]:
        """The folders of this machine no storage serves (``{path: what it is}``)."""
        return {
            jupyter_runtime_dir(): "the Jupyter runtime directory",
            **self.storage_never_served,
        }

    async def start(self) -> None:
        """Open connections and caches; called once before use."""

    async def close(self) -> None:
        """Release what :meth:`start` opened; running jobs keep running."""

    @abc.abstractmethod
    async def info(self) -> Info: ...

    @abc.abstractmethod
    async def virtual_clusters(self) -> list[VirtualCluster]: ...

    @abc.abstractmethod
    async def list_jobs(self, query: JobFilter | None = None) -> list[JobSummary]:
        """Newest first: by submission time, then id, both descending (pages rely on it)."""

    async def jobs_version(self) -> str | None:
        """A cheap tag that changes whenever any job's summary may have changed (a job
        added, changed or deleted), for ETags and the change stream; taken *before* a
        listing, it is never newer than that listing. None: the backend keeps none, and
        callers must compare listings."""
        return None

    @property
    def places_gpu_types(self) -> bool:
        """Whether a role's GPU type (``skuType``) chooses the GPUs its tasks get."""
        return False

    def submission_warnings(self, job: JobProtocol) -> list[FieldError]:
        """What this backend will not run as the job wrote it (runtime plugins it ignores or
        runs differently, GPU types it does not place by), for the warnings returned at
        submission."""
        found = runtime.submission_warnings(job, self.name)
        if not self.places_gpu_types:
            for role in job.task_roles:
                wanted = job.gpu_type(role)
                if wanted:
                    found.append(
                        FieldError(
                            f"extras.hivedScheduler.taskRoles.{role}.skuType",
                            f"GPU type {wanted!r} is not placed by this backend yet: the"
                            " tasks get any GPU of the virtual cluster",
                        )
                    )
        return found

    def check_runtime_plugins(self, job: JobProtocol) -> None:
        """Refuse plugin parameters OpenPAI's plugins would fail on (400 naming the field)."""
        errors = runtime.plugin_errors(job)
        if errors:
            raise SpecError(errors)

    @abc.abstractmethod
    async def submit(self, job: JobProtocol, *, working_dir: str | None = None) -> JobDetail:
        """Create the job; raise SpecError/BadRequest (400), Conflict (409) or Unavailable (503)
        with nothing left behind."""

    @abc.abstractmethod
    async def get_job(self, job_id: str) -> JobDetail: ...

    async def job_may_change(self, job_id: str, timeout: float) -> None:
        """Return once job ``job_id`` may have changed, or after ``timeout``: where the
        backend learns of changes (a watch) it wakes the caller then, so one waiting for
        a job to run notices at once rather than at its next poll."""
        await asyncio.sleep(timeout)

    @abc.abstractmethod
    async def stop_job(self, job_id: str) -> JobDetail: ...

    @abc.abstractmethod
    async def delete_job(self, job_id: str) -> None:
        """Remove an ended job with its logs and objects (a remote kernel's job when the
        kernel shuts down: nothing of it, its key included, stays behind). Conflict (409)
        while it has not ended, NotFound (404) when there is no such job."""

    @abc.abstractmethod
    async def logs(
        self, job_id: str, query: LogQuery, connection: ClientConnection | None = None
    ) -> LogStream:
        """``connection``: the follower's own, which a backend may take (:class:`LogStream`)."""

    @abc.abstractmethod
    async def events(self, job_id: str) -> list[JobEvent]: ...

    @abc.abstractmethod
    async def storages(self) -> list[Storage]: ...

    @abc.abstractmethod
    async def read_storage(self, name: str, path: str) -> StorageListing | FileContent: ...

    # Writes: each refuses a read-only storage (Forbidden naming it), any path leading out
    # of the storage (BadRequest / Forbidden naming ``path``), and a full volume
    # (InsufficientStorage) leaving nothing half-written under the final name.

    @abc.abstractmethod
    async def write_storage(self, name: str, path: str, piece: UploadPiece) -> UploadState:
        """Writes one piece of file ``path``: a piece must start where the last one ended
        (Conflict naming ``received`` otherwise); the last piece moves the file under its
        name, replacing a file there."""

    @abc.abstractmethod
    async def upload_state(self, name: str, path: str) -> UploadState:
        """How much of an upload to ``path`` arrived (0 when none is under way)."""

    @abc.abstractmethod
    async def make_folder(self, name: str, path: str) -> StorageEntry:
        """Creates folder ``path`` (and missing parents); Conflict if a file is there."""

    @abc.abstractmethod
    async def move_storage(self, name: str, path: str, to: str) -> StorageEntry:
        """Renames or moves ``path`` to ``to`` inside the same storage; Conflict if
        ``to`` exists."""

    @abc.abstractmethod
    async def delete_storage(
        self, name: str, path: str, recursive: bool = False, upload: bool = False
    ) -> None:
        """Deletes a file, or a folder (a non-empty one only when ``recursive``); with
        ``upload``, only the bytes of an upload to ``path`` under way (a cancelled one),
        the file under the name staying as it was."""

    @abc.abstractmethod
    async def archive_storage(self, name: str, path: str, fmt: str) -> FileContent:
        """Folder ``path`` as a ``zip`` or ``tar.gz`` archive, made while it is sent."""

    async def task_port(self, job_id: str, task: str, port: str) -> PortAddress:
        """Where this server reaches ``port`` of ``task`` (``role-index``) of one of the
        user's running jobs; 4xx naming ``task`` or ``port`` when it may not."""
        number = parse_port(port)
        job = await self.get_job(job_id)
        status = resolve(job, self.user, task, number)
        return await self.reach_port(job, status, number)

    async def reach_port(self, job: JobDetail, task: TaskStatus, port: int) -> PortAddress:
        """The address of a checked task port, as seen from this machine."""
        raise Unavailable(f"the {self.name} backend cannot reach task ports")

    async def forward_ports(self, job: JobDetail, ports: list[int]) -> PortForwarding:
        """``ports`` of the first task of running ``job``, forwarded to this machine, for a
        program that cannot reach the task's own address."""
        raise Unavailable(f"the {self.name} backend offers no port-forward")

    def storage_folder(self, name: str) -> str | None:
        """Where storage ``name`` is on this machine, for tasks that run here and reach it
        there rather than through a mount; None where tasks mount it."""
        return None

    async def utilisation(self, job_id: str) -> JobUtilisation:
        """GPU utilisation of the job's running tasks, now and over the last hour; what is
        not measured is ``None`` with a note, never zeros."""
        job = await self.get_job(job_id)
        return JobUtilisation(job_id=job.id, note=f"the {self.name} backend measures no GPUs")

    async def abnormal_jobs(self) -> list[AbnormalJob]:
        """Running jobs OpenPAI's rule flags, with why: running over
        ``abnormal_running_days``, or GPUs used under ``abnormal_gpu_percent`` over the
        last hour. Utilisation comes from :meth:`utilisation` (cached, batched)."""
        running = await self.list_jobs(JobFilter(state=[JobState.RUNNING]))
        found = []
        for job in running:
            gpu_percent = None
            if job.total_gpu_number > 0:
                gpu_percent = await self._hour_percent(job.id)
            reasons = abnormal_reasons(
                job,
                gpu_percent,
                days=self.abnormal_running_days,
                percent=self.abnormal_gpu_percent,
                grace=self.abnormal_grace_minutes,
            )
            if reasons:
                found.append(
                    AbnormalJob(
                        job=job,
                        reasons=reasons,
                        gpu_percent_last_hour=gpu_percent,
                        may_stop=job.user == self.user,
                    )
                )
        return sorted(found, key=lambda a: a.job.launched_time or a.job.submission_time)

    async def _hour_percent(self, job_id: str) -> float | None:
        try:
            usage = (await self.utilisation(job_id)).last_hour
        except NotFound:  # ended meanwhile
            return None
        return usage.gpu_percent if usage is not None else None

    async def registry_credentials(self, secret: str, host: str) -> tuple[str, str] | None:
        """The (username, password) for ``host`` in the Secret ``secret``: registries'
        ``{"secret": NAME}`` credentials. Only a backend with Secrets has them."""
        raise NotImplementedError(
            f"a registry's credentials from the Secret {secret!r} need the Kubernetes backend;"
            " give them as a file instead"
        )

    async def images_on_gpu_nodes(self) -> dict[str, int] | None:
        """Image name (each of a node's ``status.images`` names) → how many GPU nodes hold
        it: images that start without a pull. None where nodes do not say."""
        return None

    async def self_check(self) -> SelfCheck:
        """``jupyter pai check``: each permission the backend lacks where its jobs run, in
        words, and whether what it relies on answers. Jobs that run here: nothing to check."""
        return nothing_to_check(self.name, self.user)

    async def nodes(self) -> list[NodeResources]:
        """The hardware view: each node's GPUs, CPU and memory, what jobs request of them,
        and those jobs."""
        return []
