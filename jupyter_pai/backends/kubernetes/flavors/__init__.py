"""Flavors: how a job becomes the objects of one cluster scheduler. Pure builders."""

from __future__ import annotations

from ..states import Ending
from .base import Built, Flavor, FlavorSettings, StopStep, Waiting, primary_metadata
from .hived import HivedFlavor, HivedSettings
from .kueue import KueueFlavor
from .native import NativeFlavor, NativeSettings
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
    "Ending",
    "Flavor",
    "FlavorSettings",
    "HivedFlavor",
    "HivedSettings",
    "KueueFlavor",
    "NativeFlavor",
    "NativeSettings",
    "StopStep",
    "VolcanoFlavor",
    "Waiting",
    "primary_metadata",
]
