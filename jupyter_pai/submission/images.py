"""Which images a submission may name: the admin's catalogue, the listed registries' tags,
and (unless the admin turns custom images off) any reference a user types.

A tag of a listed registry must exist there (a typo fails at submission, naming the closest
tags, not minutes later as a pull error); an image from a registry nobody listed passes as
before, since nothing can be said about it."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..backends.base import Backend
from ..backends.models import Image
from ..config import PAIConfig
from ..errors import FieldError, SpecError
from ..images import ImageCatalogue, ImageReference, RegistrySettings
from ..images.choices import ImageChoices
from ..images.models import ImageRepository, RegistryStatus
from ..spec.protocol import JobProtocol


@dataclass
class ImagePolicy:
    #: ``PAIConfig.images``: named entries with a ``uri``
    static: Sequence[Mapping[str, Any]] = ()
    #: the listed registries (None: no registry listed)
    catalogue: ImageCatalogue | None = None
    #: whether any typed reference is allowed
    custom: bool = True
    #: the listed registries' hosts (``127.0.0.1:5000``)
    registry_hosts: frozenset[str] = frozenset()
    _static_uris: set[str] = field(init=False, default_factory=set)

    def __post_init__(self) -> None:
        self._static_uris = {str(e.get("uri")) for e in self.static if e.get("uri")}

    @classmethod
    def from_config(cls, config: PAIConfig) -> ImagePolicy:
        """What may be chosen, without listing anything (no catalogue)."""
        registries = settings_of(config)
        return cls(
            static=config.images,
            custom=config.custom_images,
            registry_hosts=frozenset(r.host for r in registries),
        )

    def listed(self, uri: str) -> bool:
        """From the catalogue, or from a listed registry."""
        if uri in self._static_uris:
            return True
        try:
            return ImageReference.parse(uri).registry in self.registry_hosts
        except ValueError:
            return False

    def resolve(self, image: str, where: str = "image") -> str:
        """A picker's choice as a URI: a catalogue name, or a reference the policy allows."""
        if not image:
            return ""
        for entry in self.static:
            if image in (entry.get("name"), entry.get("uri")):
                return str(entry.get("uri") or image)
        try:
            ImageReference.parse(image)
        except ValueError as error:
            raise SpecError([FieldError(where, str(error))]) from None
        if not self.custom and not self.listed(image):
            raise SpecError([FieldError(where, self._not_allowed(image))])
        return image

    def _not_allowed(self, uri: str) -> str:
        names = ", ".join(str(e.get("name")) for e in self.static) or "none"
        return (
            f"{uri!r} is not an image this server offers, and custom images are turned off"
            f" (PAIConfig.custom_images): choose a catalogue image ({names}) or a tag of a"
            " listed registry (jupyter pai images)"
        )

    async def errors(self, job: JobProtocol) -> list[FieldError]:
        """What is wrong with the job's images, each naming its prerequisite's ``uri``."""
        found = []
        for index, pre in enumerate(job.prerequisites):
            if pre.type != "dockerimage" or not isinstance(pre.uri, str) or not pre.uri:
                continue
            where = f"prerequisites.{index}.uri"
            if not self.custom and not self.listed(pre.uri):
                found.append(FieldError(where, self._not_allowed(pre.uri)))
            elif self.catalogue is not None:
                problem = await self.catalogue.check(pre.uri)
                if problem:
                    found.append(FieldError(where, problem))
        return found

    async def check(self, job: JobProtocol) -> None:
        found = await self.errors(job)
        if found:
            raise SpecError(found)


def image_policy(config: PAIConfig, backend: Callable[[], Awaitable[Backend]]) -> ImagePolicy:
    """The policy ``config`` describes; registries' ``{"secret": NAME}`` credentials are
    read through the backend (started on first need)."""
    registries = settings_of(config)
    hosts: dict[str, list[str]] = {}
    for entry, settings in zip(config.image_registries, registries, strict=True):
        secret = (entry.get("credentials") or {}).get("secret")
        if secret:
            hosts.setdefault(str(secret), []).append(settings.host)

    async def from_secret(secret: str) -> tuple[str, str] | None:
        reader = await backend()
        for host in hosts.get(secret, []):
            found = await reader.registry_credentials(secret, host)
            if found is not None:
                return found
        return None

    catalogue = (
        ImageCatalogue(
            registries, refresh_seconds=config.image_refresh_seconds, credentials=from_secret
        )
        if registries
        else None
    )
    return ImagePolicy(
        static=config.images,
        catalogue=catalogue,
        custom=config.custom_images,
        registry_hosts=frozenset(r.host for r in registries),
    )


def settings_of(config: PAIConfig) -> list[RegistrySettings]:
    return [RegistrySettings.from_config(i, e) for i, e in enumerate(config.image_registries)]


async def image_choices(
    policy: ImagePolicy, backend: Backend, *, wait: float = 5.0
) -> ImageChoices:
    """What every picker offers: the catalogue, the registries' repositories and tags (with
    how many GPU nodes hold each), each registry's state, and whether typing is allowed.
    The first answer waits up to ``wait`` seconds for the first listing."""
    repositories: list[ImageRepository] = []
    statuses: list[RegistryStatus] = []
    if policy.catalogue is not None:
        await policy.catalogue.ready(wait)
        repositories = policy.catalogue.repositories()
        statuses = policy.catalogue.statuses()
        held = await backend.images_on_gpu_nodes()
        if held is not None:
            repositories = [with_node_counts(r, held) for r in repositories]
    return ImageChoices(
        items=[Image.model_validate(i) for i in policy.static],
        repositories=repositories,
        registries=statuses,
        custom_images=policy.custom,
    )


def with_node_counts(repository: ImageRepository, held: Mapping[str, int]) -> ImageRepository:
    """Each tag's count of GPU nodes holding it, by name or by digest (nodes list both
    forms, Docker Hub names in full: ``docker.io/library/python:3.11``)."""
    tags = []
    for tag in repository.tags:
        reference = ImageReference.parse(tag.uri)
        names = {tag.uri, reference.uri}
        if tag.digest:
            names |= {f"{name}@{tag.digest}" for name in (repository.uri, reference.name)}
        tags.append(tag.model_copy(update={"nodes_with_image": max(held.get(n, 0) for n in names)}))
    return repository.model_copy(update={"tags": tags})
