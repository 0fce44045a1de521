"""What a folder holds, to compare before and after an attack on it."""

from __future__ import annotations

from pathlib import Path


def snapshot(folder: Path) -> dict[str, bytes | None]:
    """Every path under ``folder`` (links not followed): a file's bytes, None for the rest."""
    found: dict[str, bytes | None] = {}
    for path in sorted(folder.rglob("*")):
        rel = str(path.relative_to(folder))
        found[rel] = path.read_bytes() if path.is_file() and not path.is_symlink() else None
    return found
