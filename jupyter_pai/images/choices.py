"""``GET images``: everything an image picker offers, in one answer."""

from __future__ import annotations

from pydantic import Field

from ..backends.models import ImageList
from .models import ImageRepository, RegistryStatus


class ImageChoices(ImageList):
    """The admin's catalogue (``items``), the listed registries' repositories with their
    tags, each registry's state, and whether any typed reference is allowed."""

    repositories: list[ImageRepository] = Field(default_factory=list)
    registries: list[RegistryStatus] = Field(default_factory=list)
    custom_images: bool = True
