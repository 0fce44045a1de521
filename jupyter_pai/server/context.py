"""What the handlers share: the configuration and one backend, started on first use."""

from __future__ import annotations

import asyncio
import contextlib

from ..backends.base import Backend
from ..backends.jobchanges import JobChanges
from ..backends.selfcheck import check_and_log
from ..config import PAIConfig
from ..submission.images import ImagePolicy, image_policy
from .portlinks import PortLinks


class PAIContext:
    def __init__(
        self,
        config: PAIConfig,
        working_dir: str,
        log: object = None,
        *,
        allow_hidden: bool = False,
        private_folders: dict[str, str] | None = None,
    ) -> None:
        """``allow_hidden``: the server's ``ContentsManager.allow_hidden``, which storages
        follow; ``private_folders``: the server's own folders no storage serves (its
        runtime directory), ``{path: what it is}``."""
        self.config = config
        self.working_dir = working_dir
        self.allow_hidden = allow_hidden
        self.private_folders = dict(private_folders or {})
        self._backend: Backend | None = None
        self._lock = asyncio.Lock()
        self._check: asyncio.Task[None] | None = None
        #: The one hub of job changes every open ``job-changes`` stream listens to.
        self.changes = JobChanges(self.backend)
        #: Signs the links that open task ports in sandboxed tabs (a key per server run).
        self.port_links = PortLinks()
        #: The images submissions may name, and the registries listed for the pickers.
        self.images: ImagePolicy = image_policy(config, self.backend)

    async def image_policy(self) -> ImagePolicy:
        """The policy, its registries listed in the background from the first use on."""
        if self.images.catalogue is not None:
            self.images.catalogue.start()
        return self.images

    async def backend(self) -> Backend:
        if self._backend is None:
            async with self._lock:
                if self._backend is None:
                    # A server's log follows are read by a process of their own.
                    relay = "log_relay" in self.config.backend_type().class_trait_names()
                    backend = self.config.make_backend(**({"log_relay": True} if relay else {}))
                    # Storages show what Jupyter's own file browser shows, never its files.
                    backend.storage_allow_hidden = self.allow_hidden
                    backend.storage_never_served = {
                        **backend.storage_never_served,
                        **self.private_folders,
                    }
                    await backend.start()
                    self._backend = backend
                    # What the user lacks on the cluster, in the server's log at once (in
                    # the background: reviews must not delay the first answer).
                    self._check = asyncio.create_task(check_and_log(backend))
        return self._backend

    async def close(self) -> None:
        await self.changes.close()
        if self.images.catalogue is not None:
            await self.images.catalogue.close()
        if self._check is not None:
            self._check.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._check
        if self._backend is not None:
            await self._backend.close()
            self._backend = None
