"""What a :class:`~jupyter_pai.Client` talks to: the configured backend in this process
(as the CLI does), or a Jupyter server's REST API (:mod:`.rest`). Both answer with the REST
API's models, so the client above them has one code path."""

from __future__ import annotations

import abc
import os
from collections.abc import AsyncIterator

from traitlets.config import Config

from ..backends.base import Backend, FileContent, LogQuery
from ..backends.models import (
    Info,
    JobDetail,
    JobEvent,
    JobFilter,
    JobSummary,
    NotebookJobRequest,
    NotebookJobResult,
    Storage,
    StorageListing,
    SubmitResult,
    VirtualCluster,
)
from ..config import PAIConfig, load_config
from ..images.choices import ImageChoices
from ..submission.images import ImagePolicy, image_choices, image_policy
from ..submission.jobs import JobRequest, submit_job


class Connection(abc.ABC):
    """The async operations the client needs; every method runs on the client's loop."""

    @abc.abstractmethod
    async def info(self) -> Info: ...

    @abc.abstractmethod
    async def submit(self, request: JobRequest) -> SubmitResult: ...

    @abc.abstractmethod
    async def submit_notebook(self, request: NotebookJobRequest) -> NotebookJobResult:
        """Run a notebook as a job (``request.path``: on this machine for the backend, in
        the server's tree for a server)."""

    @abc.abstractmethod
    async def list_jobs(self, query: JobFilter) -> list[JobSummary]: ...

    @abc.abstractmethod
    async def get_job(self, job_id: str) -> JobDetail: ...

    @abc.abstractmethod
    async def stop_job(self, job_id: str) -> JobDetail: ...

    @abc.abstractmethod
    async def events(self, job_id: str) -> list[JobEvent]: ...

    @abc.abstractmethod
    def logs(self, job_id: str, query: LogQuery) -> AsyncIterator[bytes]:
        """The task's log in chunks; with ``query.follow`` until the task ends."""

    @abc.abstractmethod
    async def virtual_clusters(self) -> list[VirtualCluster]: ...

    @abc.abstractmethod
    async def images(self) -> ImageChoices:
        """The catalogue and the registries' repositories and tags."""

    @abc.abstractmethod
    async def storages(self) -> list[Storage]: ...

    @abc.abstractmethod
    async def read_storage(self, name: str, path: str) -> StorageListing | bytes: ...

    async def close(self) -> None:  # noqa: B027 — most connections hold nothing to release
        """Release connections; jobs keep running."""


async def started(backend: Backend) -> Backend:
    """``backend`` with its connections and caches open."""
    await backend.start()
    return backend


class BackendConnection(Connection):
    """The configured backend in this process: the same jobs, state and cluster credentials
    as ``jupyter pai`` on this machine."""

    def __init__(
        self,
        config: Config | None = None,
        *,
        backend: str | None = None,
        working_dir: str | None = None,
    ) -> None:
        merged = load_config()
        # Housekeeping passes and a warm supervisor launcher are for the server; a
        # notebook's client, like the CLI, runs scheduling when it changes something.
        merged.merge(Config({"LocalBackend": {"housekeeping": 0.0, "fork_supervisors": False}}))
        if config is not None:
            merged.merge(config)
        if backend:
            merged.merge(Config({"PAIConfig": {"backend": backend}}))
        self.pai_config = PAIConfig(config=merged)
        self.working_dir = working_dir
        self._backend: Backend | None = None
        self._images: ImagePolicy | None = None

    def image_policy(self) -> ImagePolicy:
        """The configured image policy; its registries are listed when first asked."""
        if self._images is None:
            self._images = image_policy(self.pai_config, self.backend)
        return self._images

    async def backend(self) -> Backend:
        """The configured backend, made and started by the first call that needs it."""
        if self._backend is None:
            self._backend = await started(self.pai_config.make_backend())
        return self._backend

    async def info(self) -> Info:
        return await (await self.backend()).info()

    async def submit(self, request: JobRequest) -> SubmitResult:
        parsed = request.parse()
        working_dir = self.working_dir or os.getcwd()
        return await submit_job(
            await self.backend(), parsed, working_dir=working_dir, images=self.image_policy()
        )

    async def submit_notebook(self, request: NotebookJobRequest) -> NotebookJobResult:
        # nbformat: imported only by those who run a notebook.
        from ..submission.nbjob import NotebookRun
        from ..submission.notebooks import submit_notebook

        source = os.path.join(self.working_dir or os.getcwd(), request.path)
        backend = await self.backend()
        run = NotebookRun.requested(request, source)
        return await submit_notebook(backend, run, images=self.image_policy())

    async def list_jobs(self, query: JobFilter) -> list[JobSummary]:
        return await (await self.backend()).list_jobs(query)

    async def get_job(self, job_id: str) -> JobDetail:
        return await (await self.backend()).get_job(job_id)

    async def stop_job(self, job_id: str) -> JobDetail:
        return await (await self.backend()).stop_job(job_id)

    async def events(self, job_id: str) -> list[JobEvent]:
        return await (await self.backend()).events(job_id)

    async def logs(self, job_id: str, query: LogQuery) -> AsyncIterator[bytes]:
        stream = await (await self.backend()).logs(job_id, query)
        try:
            async for chunk in stream.chunks:
                yield chunk
        finally:
            closer = getattr(stream.chunks, "aclose", None)
            if closer is not None:
                await closer()

    async def virtual_clusters(self) -> list[VirtualCluster]:
        return await (await self.backend()).virtual_clusters()

    async def images(self) -> ImageChoices:
        policy = self.image_policy()
        if policy.catalogue is not None:
            # Listed in the background from the first ask on; that ask waits for a whole
            # first round, later ones answer from the lists at once.
            policy.catalogue.start()
            await policy.catalogue.ready(policy.catalogue.round_timeout)
        return await image_choices(policy, await self.backend())

    async def storages(self) -> list[Storage]:
        return await (await self.backend()).storages()

    async def read_storage(self, name: str, path: str) -> StorageListing | bytes:
        found = await (await self.backend()).read_storage(name, path)
        if not isinstance(found, FileContent):
            return found
        return b"".join([chunk async for chunk in found.chunks])

    async def close(self) -> None:
        if self._images is not None and self._images.catalogue is not None:
            await self._images.catalogue.close()
        if self._backend is not None:
            backend, self._backend = self._backend, None
            await backend.close()
