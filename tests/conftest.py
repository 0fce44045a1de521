"""Shared by every test: the checkout importable by subprocesses (CLI, supervisors, servers)
even where the package is not installed in editable mode."""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
os.environ["PYTHONPATH"] = os.pathsep.join(
    p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p
)
