"""Kubernetes resource quantities (``500m``, ``4Gi``) as numbers."""

from __future__ import annotations

import re
from typing import Any

_SUFFIX = {
    "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60,
    "n": 1e-9, "u": 1e-6, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18,
}  # fmt: skip


def parse(value: Any) -> float:
    if value is None or value == "":
        return 0.0
    m = re.fullmatch(r"([0-9.eE+-]+?)([a-zA-Z]*)", str(value).strip())
    if not m:
        return 0.0
    return float(m.group(1)) * _SUFFIX.get(m.group(2), 1)


def mebibytes(value: Any) -> int:
    return int(parse(value) / 2**20)
