"""Browsing a storage that is a directory on this machine, never outside its root.

Refused: absolute paths, ``..`` segments (also once URL-decoded), NUL bytes, and symlinks
whose target lies outside the root."""

from __future__ import annotations

import asyncio
import os
import stat
from collections.abc import AsyncIterator
from datetime import datetime, timezone
from pathlib import Path, PurePosixPath

from ..errors import BadRequest, FieldError, Forbidden, NotFound
from .base import FileContent
from .models import StorageEntry, StorageListing
from .storage_ops import is_upload_temp

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


def resolve_inside(root: Path, path: str) -> Path:
    rel = clean_relative(path)
    real_root = root.expanduser().resolve()
    target = (real_root / rel).resolve()
    if target != real_root and real_root not in target.parents:
        raise Forbidden(
            f"path {path!r} leads outside the storage (through a symbolic link)",
            [FieldError("path", "a symbolic link points outside the storage")],
        )
    return target


async def read_path(storage: str, root: Path, path: str) -> StorageListing | FileContent:
    target = await asyncio.to_thread(resolve_inside, root, path)
    rel = clean_relative(path)
    try:
        st = await asyncio.to_thread(os.stat, target)
    except FileNotFoundError:
        raise NotFound(f"storage {storage}: no file or folder {str(rel)!r}") from None
    if stat.S_ISDIR(st.st_mode):
        entries = await asyncio.to_thread(_list, root, target)
        return StorageListing(
            storage=storage, path="" if str(rel) == "." else str(rel), entries=entries
        )
    modified = datetime.fromtimestamp(st.st_mtime, timezone.utc)
    return FileContent(name=target.name, size=st.st_size, chunks=_chunks(target), modified=modified)


def _list(root: Path, folder: Path) -> list[StorageEntry]:
    root = root.expanduser().resolve()
    entries = []
    for child in sorted(folder.iterdir(), key=lambda p: p.name):
        if is_upload_temp(child.name):
            continue  # an upload under way: it shows under its name once complete
        try:
            resolved = child.resolve()
            if resolved != root and root not in resolved.parents:
                continue  # a link out of the storage is not shown at all
            st = child.stat()
        except OSError:
            continue
        entries.append(
            StorageEntry(
                name=child.name,
                path=str(child.relative_to(root)),
                type="directory" if stat.S_ISDIR(st.st_mode) else "file",
                size=None if stat.S_ISDIR(st.st_mode) else st.st_size,
                modified=datetime.fromtimestamp(st.st_mtime, timezone.utc),
            )
        )
    return entries


async def _chunks(path: Path) -> AsyncIterator[bytes]:
    f = await asyncio.to_thread(open, path, "rb")
    try:
        while True:
            data = await asyncio.to_thread(f.read, CHUNK)
            if not data:
                break
            yield data
    finally:
        f.close()
