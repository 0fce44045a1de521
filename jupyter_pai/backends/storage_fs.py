"""Browsing a storage that is a directory on this machine, never outside its root.

Refused: absolute paths, ``..`` segments (also once URL-decoded), NUL bytes, symlinks
whose target lies outside the root, and what the storage's :class:`.storage_ops.Rules` do
not serve (hidden paths, the runtime and state directories). The path is walked by
:func:`.storage_ops.read` with directory descriptors, and the file read from the
descriptor it opened: a folder swapped for a link meanwhile leads nowhere else."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from datetime import datetime, timezone
from pathlib import Path, PurePosixPath
from typing import BinaryIO

from ..errors import BadRequest, FieldError
from . import storage_ops
from .base import FileContent
from .models import StorageListing
from .storage_writes import entry_model, in_thread

CHUNK = 256 * 1024


def clean_relative(path: str) -> PurePosixPath:
    """The request path as a relative path with no way up; raises BadRequest otherwise."""
    if "\x00" in path:
        raise BadRequest(
            f"path {path!r} contains a NUL byte", [FieldError("path", "contains a NUL byte")]
        )
    if path.startswith("/") or path.startswith("\\"):
        raise BadRequest(
            f"path {path!r} must be relative to the storage root",
            [FieldError("path", "is absolute; give a path inside the storage")],
        )
    parts = [p for p in path.replace("\\", "/").split("/") if p not in ("", ".")]
    if any(p == ".." for p in parts):
        raise BadRequest(
            f"path {path!r} must not contain '..'",
            [FieldError("path", "contains '..'; paths stay inside the storage")],
        )
    return PurePosixPath(*parts) if parts else PurePosixPath(".")


async def read_path(
    storage: str, root: Path, path: str, rules: storage_ops.Rules | None = None
) -> StorageListing | FileContent:
    rel = str(clean_relative(path))
    kind, found, st = await in_thread(
        storage, storage_ops.read, str(root), "" if rel == "." else rel, rules
    )
    if kind == "dir":
        entries = [entry_model(e) for e in found]
        return StorageListing(storage=storage, path="" if rel == "." else rel, entries=entries)
    # A file object (not the bare descriptor): closed even if the answer is never sent.
    f = os.fdopen(found, "rb", buffering=0)
    modified = datetime.fromtimestamp(st.st_mtime, timezone.utc)
    name = PurePosixPath(rel).name
    return FileContent(name=name, size=st.st_size, chunks=_chunks(f, st.st_size), modified=modified)


async def _chunks(f: BinaryIO, size: int) -> AsyncIterator[bytes]:
    """The file as it was when opened: one growing meanwhile is cut at its size then."""
    left = size
    try:
        while left > 0:
            data = await asyncio.to_thread(f.read, min(CHUNK, left))
            if not data:
                break
            left -= len(data)
            yield data
    finally:
        f.close()
