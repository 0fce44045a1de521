"""The live image catalogue: every configured registry's repositories and tags, refreshed in
the background, each registry bounded by a timeout. A registry that fails keeps its last
lists and its status says why; nothing here raises into the server."""

from __future__ import annotations

import asyncio
import contextlib
import difflib
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone

import aiohttp

from ..backends.registryauth import Credentials
from .auth import NotFoundError, RegistryError, Transport
from .harbor import HarborClient
from .models import ImageRepository, ImageTag, RegistryStatus
from .oci import OciClient, natural_key
from .reference import ImageReference
from .settings import RegistrySettings

log = logging.getLogger(__name__)

SecretReader = Callable[[str], Awaitable[Credentials | None]]


@dataclass
class _Registry:
    settings: RegistrySettings
    transport: Transport
    client: OciClient | HarborClient
    status: RegistryStatus
    repositories: list[ImageRepository] = field(default_factory=list)


def newest_first(tags: list[ImageTag]) -> list[ImageTag]:
    """Dated tags newest first, then undated ones by name, descending."""
    dated = sorted(
        (t for t in tags if t.created), key=lambda t: (t.created, natural_key(t.name)), reverse=True
    )
    undated = sorted(
        (t for t in tags if not t.created), key=lambda t: natural_key(t.name), reverse=True
    )
    return dated + undated


class ImageCatalogue:
    def __init__(
        self,
        registries: list[RegistrySettings],
        *,
        refresh_seconds: float = 300,
        max_repositories: int = 500,
        max_tags: int = 100,
        describe_tags: int = 20,
        timeout: float = 10.0,
        round_timeout: float | None = None,
        concurrency: int = 8,
        page_size: int = 100,
        credentials: SecretReader | None = None,
    ) -> None:
        self.settings = list(registries)
        self.refresh_seconds = refresh_seconds
        self.max_repositories, self.max_tags = max_repositories, max_tags
        self.describe_tags, self.timeout = describe_tags, timeout
        #: one registry's whole round (listing and describing) at most
        self.round_timeout = (
            round_timeout if round_timeout is not None else max(12 * timeout, 120.0)
        )
        self.concurrency, self.page_size = concurrency, page_size
        self._secret_reader = credentials
        self._session: aiohttp.ClientSession | None = None
        self._registries: list[_Registry] | None = None
        self._task: asyncio.Task[None] | None = None
        self._round: asyncio.Task[None] | None = None
        self._first_round = asyncio.Event()
        self._statuses = [
            RegistryStatus(name=s.name, url=s.url, kind=s.kind, ok=False) for s in self.settings
        ]

    # -- lifecycle -------------------------------------------------------------------------
    def start(self) -> None:
        """Refresh in the background: now, then every ``refresh_seconds``."""
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(
                self._loop(), name="pai-image-catalogue"
            )

    async def close(self) -> None:
        for task in (self._task, self._round):
            if task is not None and not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        self._task = self._round = None
        if self._session is not None:
            await self._session.close()
            self._session = None
            self._registries = None

    async def ready(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for the first round; whether it has finished."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._first_round.wait(), timeout)
        return self._first_round.is_set()

    async def _loop(self) -> None:
        while True:
            await self.refresh()
            await asyncio.sleep(self.refresh_seconds)

    def _state(self) -> list[_Registry]:
        if self._registries is None:
            self._session = aiohttp.ClientSession()
            semaphore_per = [asyncio.Semaphore(self.concurrency) for _ in self.settings]
            self._registries = []
            for settings, semaphore, status in zip(
                self.settings, semaphore_per, self._statuses, strict=True
            ):
                transport = Transport(
                    self._session,
                    settings.url,
                    timeout=self.timeout,
                    semaphore=semaphore,
                    insecure=settings.insecure,
                    basic_first=settings.kind == "harbor",
                )
                client: OciClient | HarborClient = (
                    HarborClient(settings, transport, page_size=self.page_size)
                    if settings.kind == "harbor"
                    else OciClient(settings, transport, page_size=self.page_size)
                )
                self._registries.append(_Registry(settings, transport, client, status))
        return self._registries

    # -- what pickers read -----------------------------------------------------------------
    def repositories(self) -> list[ImageRepository]:
        return [r for one in self._registries or [] for r in one.repositories]

    def statuses(self) -> list[RegistryStatus]:
        if self._registries is None:
            return list(self._statuses)
        return [one.status for one in self._registries]

    def registry_for(self, uri: str) -> RegistrySettings | None:
        """The configured registry ``uri`` comes from (by host), if any."""
        try:
            host = ImageReference.parse(uri).registry
        except ValueError:
            return None
        return next((s for s in self.settings if s.host == host), None)

    # -- refreshing ------------------------------------------------------------------------
    async def refresh(self) -> None:
        """One round: every registry at once, each bounded by ``round_timeout``. A call
        while a round runs waits for that round instead of starting another."""
        if self._round is None or self._round.done():
            self._round = asyncio.get_running_loop().create_task(self._one_round())
        await asyncio.shield(self._round)

    async def _one_round(self) -> None:
        registries = self._state()
        await asyncio.gather(*(self._refresh_bounded(one) for one in registries))
        self._first_round.set()

    async def _refresh_bounded(self, one: _Registry) -> None:
        try:
            await asyncio.wait_for(self._refresh_one(one), self.round_timeout)
        except TimeoutError:
            self._failed(
                one, f"listing {one.settings.url} took longer than {self.round_timeout:g}s"
            )
        except RegistryError as error:
            self._failed(one, str(error))
        except Exception as error:  # a registry's odd answer must not stop the others
            log.warning(
                "listing %s failed: %s", one.settings.url, type(error).__name__, exc_info=True
            )
            self._failed(one, f"listing {one.settings.url} failed ({type(error).__name__})")

    def _failed(self, one: _Registry, message: str) -> None:
        if one.status.listed_at is not None:
            message += f"; showing the list from {one.status.listed_at:%H:%M} UTC"
        log.info("image registry %s: %s", one.settings.name, message)
        one.status = one.status.model_copy(update={"ok": False, "error": message})

    async def _credentials(self, settings: RegistrySettings) -> Credentials | None:
        if settings.credentials_file is not None:
            return await asyncio.to_thread(settings.file_credentials)
        if settings.credentials_secret is not None:
            if self._secret_reader is None:
                raise RegistryError(
                    f"{settings.where}.credentials.secret needs the Kubernetes backend to read it"
                )
            try:
                found = await self._secret_reader(settings.credentials_secret)
            except Exception as error:
                raise RegistryError(
                    f"cannot read the Secret {settings.credentials_secret!r} ({settings.where}"
                    f".credentials.secret): {type(error).__name__}"
                ) from None
            if found is None:
                raise RegistryError(
                    f"the Secret {settings.credentials_secret!r} ({settings.where}.credentials"
                    f".secret) holds no credentials for {settings.host}"
                )
            return found
        return None

    async def _refresh_one(self, one: _Registry) -> None:
        try:
            one.transport.set_credentials(await self._credentials(one.settings))
        except ValueError as error:
            raise RegistryError(str(error)) from None
        names, truncated = await one.client.repositories(self.max_repositories)
        listed = await asyncio.gather(*(self._repository(one, name) for name in names))
        repositories = []
        for repository, more in listed:
            if repository is not None:
                repositories.append(repository)
            truncated = truncated or more
        one.repositories = repositories
        one.status = RegistryStatus(
            name=one.settings.name,
            url=one.settings.url,
            kind=one.settings.kind,
            ok=True,
            listed_at=datetime.now(timezone.utc),
            repositories=len(repositories),
            tags=sum(len(r.tags) for r in repositories),
            truncated=truncated,
        )

    async def _repository(self, one: _Registry, name: str) -> tuple[ImageRepository | None, bool]:
        """One repository with its tags (None when it is gone or empty), and whether tags
        were left out."""
        client = one.client
        try:
            if isinstance(client, HarborClient):
                tags, truncated = await client.artifacts(name, self.max_tags)
            else:
                tags, truncated = await self._oci_tags(client, name)
        except NotFoundError:
            return None, False  # configured but absent, or deleted since it was listed
        if not tags:
            return None, truncated
        repository = ImageRepository(
            registry=one.settings.name,
            name=name,
            uri=f"{one.settings.host}/{name}",
            tags=newest_first(tags),
        )
        return repository, truncated

    async def _oci_tags(self, client: OciClient, repository: str) -> tuple[list[ImageTag], bool]:
        """The ``max_tags`` last tags by name, the first ``describe_tags`` of them described
        (dates are only known once described: the name order stands in for age)."""
        names = sorted(await client.tags(repository), key=natural_key, reverse=True)
        kept = names[: self.max_tags]
        described = await asyncio.gather(
            *(self._describe(client, repository, tag) for tag in kept[: self.describe_tags])
        )
        by_name = [
            ImageTag(name=t, uri=f"{client.settings.host}/{repository}:{t}")
            for t in kept[self.describe_tags :]
        ]
        return [*described, *by_name], len(names) > self.max_tags

    async def _describe(self, client: OciClient, repository: str, tag: str) -> ImageTag:
        try:
            return await client.describe(repository, tag)
        except RegistryError:
            # Listed by name only: one unreadable manifest must not hide the others.
            return ImageTag(name=tag, uri=f"{client.settings.host}/{repository}:{tag}")

    # -- checking a submission -------------------------------------------------------------
    async def check(self, uri: str) -> str | None:
        """None when ``uri`` is fine or cannot be judged; else what is wrong, naming the
        closest tags (or repositories)."""
        try:
            reference = ImageReference.parse(uri)
        except ValueError as error:
            return str(error)
        index = next((i for i, s in enumerate(self.settings) if s.host == reference.registry), None)
        if index is None or reference.tag is None:
            return None
        one = self._state()[index]
        where = f"{one.settings.host}/{reference.repository}"
        cached = next((r for r in one.repositories if r.name == reference.repository), None)
        if cached is not None and any(t.name == reference.tag for t in cached.tags):
            return None
        if one.status.error is not None:
            return None  # down or refused: cannot say
        started = time.monotonic()
        try:
            if one.transport.credentials is None:
                one.transport.set_credentials(await self._credentials(one.settings))
            names = await asyncio.wait_for(one.client.tags(reference.repository), self.timeout)
        except NotFoundError:
            known = [r.name for r in one.repositories]
            closest = difflib.get_close_matches(reference.repository, known, n=3, cutoff=0.5)
            hint = f"; closest: {', '.join(closest)}" if closest else ""
            return f"repository {reference.repository!r} is not in {one.settings.host}{hint}"
        except (RegistryError, TimeoutError, ValueError):
            log.info("cannot check %s (%.1fs)", where, time.monotonic() - started)
            return None
        if reference.tag in names:
            return None
        if not names:
            return f"repository {reference.repository!r} is not in {one.settings.host}"
        ordered = sorted(names, key=natural_key, reverse=True)
        closest = difflib.get_close_matches(reference.tag, ordered, n=3, cutoff=0.3)
        hint = f"; closest: {', '.join(sorted(closest, key=natural_key))}" if closest else ""
        return f"tag {reference.tag!r} is not in {where}{hint}"
