"""What the image catalogue answers: registries' repositories, their tags, each registry's
state. Credentials never appear here."""

from __future__ import annotations

from datetime import datetime

from pydantic import Field

from ..backends.models import ApiModel


class ImageTag(ApiModel):
    name: str
    #: ``host/repository:tag``, pullable as is
    uri: str
    digest: str | None = None
    created: datetime | None = None
    #: bytes: compressed layers + config
    size: int | None = None
    #: the image config's Labels merged with the manifest's annotations
    labels: dict[str, str] = Field(default_factory=dict)
    cuda: str | None = None
    #: e.g. "pytorch 2.4.0"
    framework: str | None = None
    #: Harbor's scan: Critical, High, Medium, Low, None, Unknown
    scan_severity: str | None = None
    vulnerabilities: int | None = None
    #: GPU nodes already holding the image (filled by the server; None: unknown)
    nodes_with_image: int | None = None


class ImageRepository(ApiModel):
    #: the registry's display name
    registry: str
    name: str
    #: ``host[:port]/name``
    uri: str
    #: newest first
    tags: list[ImageTag] = Field(default_factory=list)


class RegistryStatus(ApiModel):
    name: str
    url: str
    kind: str
    ok: bool = False
    #: the last good listing
    listed_at: datetime | None = None
    error: str | None = None
    repositories: int = 0
    tags: int = 0
    #: a bound (repositories, tags) was hit
    truncated: bool = False
