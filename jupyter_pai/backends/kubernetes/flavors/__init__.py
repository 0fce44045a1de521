"""Flavours: how a job becomes the objects of one cluster scheduler. Pure builders."""

from __future__ import annotations

from .base import Built, Flavor, StopStep, primary_metadata
from .hived import HivedFlavor
from .kueue import KueueFlavor
from .native import NativeFlavor
from .volcano import VolcanoFlavor

FLAVORS: dict[str, type[Flavor]] = {
    "volcano": VolcanoFlavor,
    "kueue": KueueFlavor,
    "hived": HivedFlavor,
    "native": NativeFlavor,
}

__all__ = [
    "FLAVORS",
    "Built",
    "Flavor",
    "HivedFlavor",
    "KueueFlavor",
    "NativeFlavor",
    "StopStep",
    "VolcanoFlavor",
    "primary_metadata",
]
