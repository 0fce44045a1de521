"""Golden files: expected outputs kept in the tree, compared as text (or as what ``parse``
reads from it). ``UPDATE_GOLDEN=1`` in the environment rewrites a file from the output
first; ``UPDATE_GOLDEN=0`` (or ``false``/``no``) compares, as when it is unset."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any


def update_golden() -> bool:
    return os.environ.get("UPDATE_GOLDEN", "") not in ("", "0", "false", "no")


def golden_text(path: Path, text: str) -> str:
    """What ``path`` holds, after rewriting it from ``text`` when updating."""
    if update_golden():
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
    if not path.exists():
        raise AssertionError(f"{path} is missing: run the tests with UPDATE_GOLDEN=1 to write it")
    return path.read_text(encoding="utf-8")


def check_golden(path: Path, text: str, parse: Callable[[str], Any] = str) -> None:
    """``text`` is what ``path`` holds (compared after ``parse``, so pytest shows a diff of
    the data where the file is JSON)."""
    assert parse(text) == parse(golden_text(path, text))
