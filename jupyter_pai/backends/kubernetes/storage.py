"""Browsing a claim this server has not mounted: a short-lived pod mounts it read-only,
lists a folder or prints a file (base64) as one JSON document on stdout, and is deleted.

The path is checked here first (no ``..``, no absolute path) and again inside the pod
against the resolved storage root, so a symbolic link cannot lead out of it."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import json
import time
from collections.abc import AsyncIterator
from datetime import datetime, timezone
from typing import Any

from ...errors import Forbidden, NotFound, Unavailable
from ..base import FileContent
from ..models import StorageEntry, StorageListing
from ..storage_fs import clean_relative
from .naming import slug
from .pods import PodOptions
from .resources import POD
from .rest import ApiError, Rest, path

HELPER_LABEL = "jupyter-pai.io/storage-helper"
MAX_FILE = 16 * 1024 * 1024
MOUNT = "/storage"

SCRIPT = r"""
import base64, json, os, stat, sys
root = os.path.realpath(sys.argv[1]); rel = sys.argv[2]; limit = int(sys.argv[3])
target = os.path.realpath(os.path.join(root, rel))
def out(doc): sys.stdout.write(json.dumps(doc) + "\n"); sys.exit(0)
if target != root and not target.startswith(root + os.sep):
    out({"error": "outside"})
if not os.path.exists(target):
    out({"error": "missing"})
st = os.stat(target)
if stat.S_ISDIR(st.st_mode):
    entries = []
    for name in sorted(os.listdir(target)):
        full = os.path.join(target, name)
        real = os.path.realpath(full)
        if real != root and not real.startswith(root + os.sep):
            continue
        try:
            s = os.stat(full)
        except OSError:
            continue
        entries.append({"name": name, "path": os.path.relpath(full, root),
                        "dir": stat.S_ISDIR(s.st_mode), "size": s.st_size, "mtime": s.st_mtime})
    out({"entries": entries})
if st.st_size > limit:
    out({"error": "large", "size": st.st_size})
with open(target, "rb") as f:
    out({"file": base64.b64encode(f.read()).decode(), "size": st.st_size})
"""


class HelperPods:
    def __init__(self, rest: Rest, namespace: str, image: str, options: PodOptions) -> None:
        self.rest = rest
        self.namespace = namespace
        self.image = image
        self.options = options

    def manifest(self, claim: str, rel: str) -> dict[str, Any]:
        digest = hashlib.sha256(f"{claim}/{rel}/{time.time_ns()}".encode()).hexdigest()[:8]
        spec: dict[str, Any] = {
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 0,
            "automountServiceAccountToken": False,
            "enableServiceLinks": False,
            "containers": [
                {
                    "name": "main",
                    "image": self.image,
                    "command": [
                        "python3",
                        "-c",
                        SCRIPT.replace("$", "$$"),
                        MOUNT,
                        rel,
                        str(MAX_FILE),
                    ],
                    "volumeMounts": [{"name": "storage", "mountPath": MOUNT, "readOnly": True}],
                    "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}},
                }
            ],
            "volumes": [
                {"name": "storage", "persistentVolumeClaim": {"claimName": claim, "readOnly": True}}
            ],
        }
        if self.options.node_selector:
            spec["nodeSelector"] = dict(self.options.node_selector)
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": f"pai-browse-{slug(claim, 30)}-{digest}",
                "namespace": self.namespace,
                "labels": {HELPER_LABEL: "true"},
            },
            "spec": spec,
        }

    async def read(
        self, claim: str, path_: str, timeout: float = 60
    ) -> StorageListing | FileContent:
        rel = str(clean_relative(path_))
        body = self.manifest(claim, rel)
        name = body["metadata"]["name"]
        try:
            await self.rest.create(POD, self.namespace, body)
        except ApiError as error:
            raise Unavailable(f"cannot start the storage helper pod: {error.message}") from None
        try:
            doc = await self._result(name, timeout)
        finally:
            with contextlib.suppress(Exception):
                await self.rest.delete(POD, self.namespace, name, gracePeriodSeconds=0)
        return self._answer(claim, rel, doc)

    async def _result(self, name: str, timeout: float) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        url = path(POD, self.namespace, name)
        while time.monotonic() < deadline:
            pod = await self.rest.get(url)
            phase = (pod.get("status") or {}).get("phase")
            if phase in ("Succeeded", "Failed"):
                resp = await self.rest.open("GET", url + "/log", query={"container": "main"})
                text = await resp.text()
                resp.release()
                for line in reversed(text.splitlines()):
                    with contextlib.suppress(ValueError):
                        doc: dict[str, Any] = json.loads(line)
                        return doc
                raise Unavailable(f"the storage helper pod said nothing useful: {text[-300:]}")
            await asyncio.sleep(0.2)
        raise Unavailable(f"the storage helper pod did not finish within {timeout:.0f}s")

    @staticmethod
    def _answer(claim: str, rel: str, doc: dict[str, Any]) -> StorageListing | FileContent:
        error = doc.get("error")
        shown = "" if rel == "." else rel
        if error == "outside":
            raise Forbidden(f"path {rel!r} leads outside the storage (through a symbolic link)")
        if error == "missing":
            raise NotFound(f"storage {claim}: no file or folder {shown!r}")
        if error == "large":
            raise Forbidden(
                f"{shown} is {doc.get('size')} bytes; the helper reads files up to {MAX_FILE}"
            )
        if "entries" in doc:
            return StorageListing(
                storage=claim,
                path=shown,
                entries=[
                    StorageEntry(
                        name=e["name"],
                        path=e["path"],
                        type="directory" if e["dir"] else "file",
                        size=None if e["dir"] else e["size"],
                        modified=datetime.fromtimestamp(e["mtime"], timezone.utc),
                    )
                    for e in doc["entries"]
                ],
            )
        data = base64.b64decode(doc.get("file") or "")

        async def chunks() -> AsyncIterator[bytes]:
            yield data

        return FileContent(name=rel.rsplit("/", 1)[-1], size=len(data), chunks=chunks())
