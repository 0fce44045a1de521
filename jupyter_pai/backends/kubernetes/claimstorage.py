"""The Kubernetes backend's storages: the namespace's persistent volume claims, each read
and written through a local mapping or the storage helper pod (:mod:`.storage_calls`)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ...errors import NotFound
from ..base import FileContent, UploadPiece
from ..models import Storage, StorageEntry, StorageListing, UploadState
from ..storage_walk import Rules
from .storage import HelperPods
from .storage_calls import StorageCalls
from .watch import WatchCache

MOUNT_PATH_ANNOTATION = "jupyter-pai.io/mount-path"


class ClaimStorage:
    """The storage methods of :class:`.KubernetesBackend` (a mixin: it has the watch
    cache, the helper pods and ``storage_local_paths``)."""

    cache: WatchCache
    helpers: HelperPods | None
    storage_local_paths: dict[str, str]
    storage_rules: Callable[[], Rules]

    async def storages(self) -> list[Storage]:
        self.cache.check()
        out = []
        for claim in sorted(self.cache["claims"].values(), key=lambda c: c["metadata"]["name"]):
            meta = claim["metadata"]
            name = meta["name"]
            modes = (claim.get("spec") or {}).get("accessModes") or []
            out.append(
                Storage(
                    name=name,
                    mount_path=(meta.get("annotations") or {}).get(
                        MOUNT_PATH_ANNOTATION, f"/mnt/{name}"
                    ),
                    read_only=modes == ["ReadOnlyMany"],
                    description=f"persistent volume claim {name}",
                )
            )
        return out

    def _claim(self, name: str) -> tuple[StorageCalls, bool]:
        """The calls that reach storage ``name``, and whether it is read-only."""
        self.cache.check()
        claim = self.cache["claims"].get(name)
        if claim is None:
            raise NotFound(f"no storage {name!r}")
        assert self.helpers is not None
        local = self.storage_local_paths.get(name)
        calls = StorageCalls(
            self.helpers, Path(str(local)) if local else None, self.storage_rules()
        )
        return calls, ((claim.get("spec") or {}).get("accessModes") or []) == ["ReadOnlyMany"]

    async def read_storage(self, name: str, path_: str) -> StorageListing | FileContent:
        calls, read_only = self._claim(name)
        return await calls.read(name, path_, read_only)

    async def write_storage(self, name: str, path_: str, piece: UploadPiece) -> UploadState:
        calls, read_only = self._claim(name)
        return await calls.write(name, path_, piece, read_only)

    async def upload_state(self, name: str, path_: str) -> UploadState:
        calls, read_only = self._claim(name)
        return await calls.upload_state(name, path_, read_only)

    async def make_folder(self, name: str, path_: str) -> StorageEntry:
        calls, read_only = self._claim(name)
        return await calls.make_folder(name, path_, read_only)

    async def move_storage(self, name: str, path_: str, to: str) -> StorageEntry:
        calls, read_only = self._claim(name)
        return await calls.move(name, path_, to, read_only)

    async def delete_storage(
        self, name: str, path_: str, recursive: bool = False, upload: bool = False
    ) -> None:
        calls, read_only = self._claim(name)
        await calls.delete(name, path_, recursive, read_only, upload)

    async def archive_storage(self, name: str, path_: str, fmt: str) -> FileContent:
        calls, read_only = self._claim(name)
        return await calls.archive(name, path_, fmt, read_only)
