"""The image catalogue: the configured registries' repositories and tags, listed live."""

from .catalogue import ImageCatalogue
from .models import ImageRepository, ImageTag, RegistryStatus
from .reference import ImageReference
from .settings import RegistrySettings

__all__ = [
    "ImageCatalogue",
    "ImageReference",
    "ImageRepository",
    "ImageTag",
    "RegistrySettings",
    "RegistryStatus",
]
