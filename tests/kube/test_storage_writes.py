"""Writes to a storage through the helper pod (mounted read-write): uploads whole and in
pieces, resumed, folders, moves, deletes, archives, big downloads streamed; a read-only
storage, paths leading out, and a full volume refused. The claim is a hostPath PV whose
folder is on this machine (tests/cluster/README.md, volumes), so the tests see the bytes
land where the pod wrote them."""

from __future__ import annotations

import asyncio
import hashlib
import io
import json
import os
import subprocess
import tarfile
import time
import zipfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from jupyter_pai.backends.base import FileContent, UploadPiece
from jupyter_pai.backends.kubernetes import KubernetesBackend
from jupyter_pai.backends.models import StorageListing
from jupyter_pai.errors import (
    BadRequest,
    Conflict,
    Forbidden,
    InsufficientStorage,
    NotFound,
    PAIError,
)
from tests.cluster.pytest_plugin import TestCluster
from tests.kube.rest_server import *  # noqa: F403
from tests.kube.test_backend_storage import (
    NS,
    Volume,
    core_api,
    drop_volume,
    helper_pods,
    make_volume,
    read_all,
    started,
    volume,
)

__all__ = ["volume"]
pytestmark = pytest.mark.kube
MiB = 1024 * 1024


async def pieces(data: bytes, size: int = 256 * 1024) -> AsyncIterator[bytes]:
    for start in range(0, len(data), size):
        yield data[start : start + size]


def piece(data: bytes, offset: int, total: int) -> UploadPiece:
    return UploadPiece(offset=offset, size=len(data), total=total, chunks=pieces(data))


def no_temp(folder: Path) -> list[str]:
    """Names under ``folder`` that look like an upload's temporary file."""
    return [n for _, _, names in os.walk(folder) for n in names if "pai-upload" in n]


@pytest.fixture
async def rw(kube_cluster: TestCluster, volume: Volume) -> AsyncIterator[KubernetesBackend]:
    b = await started(kube_cluster, volume.claim)
    yield b
    await b.close()


async def test_upload_whole_in_pieces_and_resumed(rw: KubernetesBackend, volume: Volume) -> None:
    claim = volume.claim
    whole = os.urandom(3 * MiB + 17)
    state = await rw.write_storage(claim, "up/whole.bin", piece(whole, 0, len(whole)))
    assert (state.received, state.total, state.complete) == (len(whole), len(whole), True)
    assert (volume.root / "up" / "whole.bin").read_bytes() == whole

    # In pieces: the first one waits under a hidden name; the state says how far it came
    # (as after a dropped connection), and the rest resumes there.
    data = os.urandom(5 * MiB + 3)
    cut = 2 * MiB + 1
    state = await rw.write_storage(claim, "up/big.bin", piece(data[:cut], 0, len(data)))
    assert (state.received, state.complete) == (cut, False)
    assert not (volume.root / "up" / "big.bin").exists()
    listing = await rw.read_storage(claim, "up")
    assert isinstance(listing, StorageListing)
    assert [e.name for e in listing.entries] == ["whole.bin"]  # the temp file is hidden
    assert (await rw.upload_state(claim, "up/big.bin")).received == cut
    with pytest.raises(Conflict) as wrong:  # not where the last piece ended
        await rw.write_storage(claim, "up/big.bin", piece(data[cut + 1 :], cut + 1, len(data)))
    assert str(cut) in wrong.value.message
    state = await rw.write_storage(claim, "up/big.bin", piece(data[cut:], cut, len(data)))
    assert (state.received, state.complete) == (len(data), True)
    assert (volume.root / "up" / "big.bin").read_bytes() == data
    assert (await rw.upload_state(claim, "up/big.bin")).received == 0
    assert no_temp(volume.root) == []

    # A piece whose body breaks off (the browser's connection dropped): what arrived is
    # kept, and the upload resumes from what the state says.
    async def broken() -> AsyncIterator[bytes]:
        yield data[: 3 * MiB]
        raise ConnectionResetError("the client went away")

    with pytest.raises(PAIError):
        await rw.write_storage(
            claim,
            "up/cut.bin",
            UploadPiece(offset=0, size=len(data), total=len(data), chunks=broken()),
        )
    received = (await rw.upload_state(claim, "up/cut.bin")).received
    assert 0 <= received <= 3 * MiB
    state = await rw.write_storage(claim, "up/cut.bin", piece(data[received:], received, len(data)))
    assert state.complete
    assert (volume.root / "up" / "cut.bin").read_bytes() == data

    # A cancelled upload is discarded: its bytes go, the file under the name stays.
    await rw.write_storage(claim, "up/whole.bin", piece(data[:cut], 0, len(data)))
    assert no_temp(volume.root)
    await rw.delete_storage(claim, "up/whole.bin", upload=True)
    assert no_temp(volume.root) == []
    assert (volume.root / "up" / "whole.bin").read_bytes() == whole


async def test_folders_moves_and_deletes(
    kube_cluster: TestCluster, rw: KubernetesBackend, volume: Volume
) -> None:
    claim = volume.claim
    made = await rw.make_folder(claim, "new/deep")
    pod = core_api(kube_cluster).read_namespaced_pod(helper_pods(kube_cluster)[0], NS)
    assert not pod.spec.volumes[0].persistent_volume_claim.read_only  # a writable claim
    assert not pod.spec.containers[0].volume_mounts[0].read_only
    assert (made.type, made.path) == ("directory", "new/deep")
    assert (volume.root / "new" / "deep").is_dir()
    with pytest.raises(Conflict):
        await rw.make_folder(claim, "top.bin")  # a file is there
    await rw.write_storage(claim, "new/deep/f.txt", piece(b"hello", 0, 5))

    moved = await rw.move_storage(claim, "new", "renamed")
    assert (moved.type, moved.path) == ("directory", "renamed")
    assert (volume.root / "renamed" / "deep" / "f.txt").read_bytes() == b"hello"
    moved = await rw.move_storage(claim, "renamed/deep/f.txt", "sub/f.txt")
    assert (moved.type, moved.size) == ("file", 5)
    with pytest.raises(Conflict):
        await rw.move_storage(claim, "sub/f.txt", "sub/a.txt")
    with pytest.raises(NotFound):
        await rw.move_storage(claim, "nothing", "else")

    with pytest.raises(Conflict):  # a folder that is not empty only with recursive
        await rw.delete_storage(claim, "sub")
    assert (volume.root / "sub" / "a.txt").exists()
    await rw.delete_storage(claim, "sub/f.txt")
    assert not (volume.root / "sub" / "f.txt").exists()
    await rw.delete_storage(claim, "renamed/deep")  # empty
    await rw.delete_storage(claim, "sub", recursive=True)
    assert not (volume.root / "sub").exists()
    with pytest.raises(NotFound):
        await rw.delete_storage(claim, "sub")


async def test_archive_unpacks_to_the_same_files(rw: KubernetesBackend, volume: Volume) -> None:
    tree = {"data/a.txt": b"alpha", "data/x/b.bin": os.urandom(3 * MiB), "data/x/y/c": b""}
    for rel, content in tree.items():
        (volume.root / rel).parent.mkdir(parents=True, exist_ok=True)
        (volume.root / rel).write_bytes(content)
    want = {rel.removeprefix("data/"): content for rel, content in tree.items()}
    for fmt in ("zip", "tar.gz"):
        archive = await rw.archive_storage(volume.claim, "data", fmt)
        assert archive.size is None and archive.name == f"data.{fmt}"
        blob = await read_all(archive.chunks)
        got = {}
        if fmt == "zip":
            with zipfile.ZipFile(io.BytesIO(blob)) as z:
                for info in z.infolist():
                    if not info.is_dir():
                        got[info.filename] = z.read(info)
        else:
            with tarfile.open(fileobj=io.BytesIO(blob), mode="r:gz") as t:
                for member in t.getmembers():
                    if member.isfile():
                        f = t.extractfile(member)
                        assert f is not None
                        got[member.name] = f.read()
        # Names may or may not start with the folder's own name; the files are the same.
        assert {k.removeprefix("data/"): v for k, v in got.items()} == want, fmt
    with pytest.raises(BadRequest):
        await rw.archive_storage(volume.claim, "data", "rar")
    with pytest.raises(NotFound):
        await rw.archive_storage(volume.claim, "none", "zip")


def write_random(path: Path, mib: int) -> str:
    """A file of ``mib`` random MiB and 5 bytes; its SHA-256."""
    digest = hashlib.sha256()
    with open(path, "wb") as f:
        for _ in range(mib):
            block = os.urandom(MiB)
            digest.update(block)
            f.write(block)
        f.write(b"12345")
        digest.update(b"12345")
    return digest.hexdigest()


async def test_a_download_bigger_than_16_mib_streams(rw: KubernetesBackend, volume: Volume) -> None:
    size = 40 * MiB + 5
    digest = write_random(volume.root / "huge.bin", 40)
    content = await rw.read_storage(volume.claim, "huge.bin")
    assert isinstance(content, FileContent)
    assert content.size == size
    got, count, largest = hashlib.sha256(), 0, 0
    async for chunk in content.chunks:
        got.update(chunk)
        count += 1
        largest = max(largest, len(chunk))
    assert got.hexdigest() == digest
    assert count > 1 and largest <= 8 * MiB  # streamed, never whole


async def test_a_read_only_storage_refuses_every_write_before_any_pod(
    kube_cluster: TestCluster, tmp_path: Path
) -> None:
    made = make_volume(kube_cluster, tmp_path, read_only_many=True)
    b = await started(kube_cluster, made.claim)
    try:
        for call in writes(b, made.claim, "sub/new.txt"):
            with pytest.raises(Forbidden) as refused:
                await call
            assert f"storage {made.claim} is read-only" in refused.value.message
        assert helper_pods(kube_cluster) == []
        # Reading still works (its helper pod mounts the claim read-only).
        listing = await b.read_storage(made.claim, "sub")
        assert isinstance(listing, StorageListing)
        pod = core_api(kube_cluster).read_namespaced_pod(helper_pods(kube_cluster)[0], NS)
        assert pod.spec.volumes[0].persistent_volume_claim.read_only is True
    finally:
        await b.close()
        drop_volume(kube_cluster, made)
    assert sorted(p.name for p in made.root.iterdir()) == ["escape", "inside", "sub", "top.bin"]


def writes(b: KubernetesBackend, claim: str, path: str) -> Iterator[object]:
    """A coroutine for every write call on ``path``."""
    yield b.write_storage(claim, path, piece(b"x", 0, 1))
    yield b.upload_state(claim, path)
    yield b.make_folder(claim, path)
    yield b.move_storage(claim, path, "elsewhere")
    yield b.move_storage(claim, "sub/a.txt", path)
    yield b.delete_storage(claim, path, recursive=True)


async def test_paths_leading_out_are_refused_for_every_write(
    rw: KubernetesBackend, volume: Volume, tmp_path: Path
) -> None:
    outdir = tmp_path / "outdir"
    outdir.mkdir()
    (outdir / "keep.txt").write_text("keep\n")
    (volume.root / "out").symlink_to(outdir)  # planted in the claim, pointing outside
    before = sorted(os.listdir(outdir))
    for path in ("../x", "sub/../../x", "/etc/x"):
        for call in writes(rw, volume.claim, path):
            with pytest.raises(BadRequest):
                await call
    for path in ("out/x.txt", "out/keep.txt", "out/new/deep", "escape", "out"):
        for call in writes(rw, volume.claim, path):
            with pytest.raises(Forbidden):
                await call
    with pytest.raises(Forbidden):
        await rw.archive_storage(volume.claim, "out", "zip")
    assert sorted(os.listdir(outdir)) == before
    assert (outdir / "keep.txt").read_text() == "keep\n"
    assert volume.outside.read_text() == "secret\n"
    assert (volume.root / "sub" / "a.txt").read_text() == "alpha\n"


def run(argv: list[str]) -> None:
    subprocess.run(argv, check=True)


async def test_a_full_volume_says_507_and_leaves_nothing(
    kube_cluster: TestCluster, tmp_path: Path
) -> None:
    """A tmpfs of 4 MiB mounted (as root, on this machine) over the PV's folder before the
    helper pod starts: an 8 MiB upload does not fit."""
    root = tmp_path / "small"
    root.mkdir()
    run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(root)])
    made = None
    try:
        made = make_volume(kube_cluster, tmp_path, root=root)
        b = await started(kube_cluster, made.claim)
        try:
            data = os.urandom(8 * MiB)
            with pytest.raises(InsufficientStorage) as full:
                await b.write_storage(made.claim, "big.bin", piece(data, 0, len(data)))
            assert "full" in full.value.message
            assert os.listdir(root) == []  # nothing under the final name, no temp left
            # A small file still fits afterwards.
            state = await b.write_storage(made.claim, "small.txt", piece(b"ok", 0, 2))
            assert state.complete and (root / "small.txt").read_bytes() == b"ok"
        finally:
            await b.close()
    finally:
        if made is not None:
            drop_volume(kube_cluster, made)
        run(["umount", str(root)])


# -- through the REST API (one flavor: the storage calls do not depend on it) ----------------


@pytest.fixture
def flavor() -> str:
    return "native"


async def test_rest_uploads_in_pieces_moves_archives_and_deletes(
    jp_fetch: Any, kube_cluster: TestCluster, volume: Volume
) -> None:
    claim = volume.claim
    deadline = time.monotonic() + 20
    while claim not in [
        s["name"] for s in json.loads((await jp_fetch("pai", "api", "storage")).body)["items"]
    ]:
        assert time.monotonic() < deadline, f"no storage {claim}"
        await asyncio.sleep(0.3)
    data = os.urandom(3 * MiB + 5)
    cut = MiB + 1

    async def put(start: int, end: int) -> Any:
        resp = await jp_fetch(
            "pai",
            "api",
            "storage",
            claim,
            "rest",
            "f.bin",
            method="PUT",
            body=data[start:end],
            headers={"Content-Range": f"bytes {start}-{end - 1}/{len(data)}"},
        )
        return json.loads(resp.body)

    doc = await put(0, cut)
    assert (doc["received"], doc["complete"]) == (cut, False)
    resp = await jp_fetch("pai", "api", "storage", claim, "rest", "f.bin", params={"upload": "1"})
    assert json.loads(resp.body)["received"] == cut
    doc = await put(cut, len(data))
    assert (doc["received"], doc["complete"]) == (len(data), True)
    resp = await jp_fetch("pai", "api", "storage", claim, "rest", "f.bin")
    assert resp.body == data and resp.headers["Last-Modified"]

    resp = await jp_fetch(
        "pai",
        "api",
        "storage",
        claim,
        "rest",
        "made",
        method="POST",
        body=json.dumps({"type": "directory"}),
    )
    assert resp.code == 201 and (volume.root / "rest" / "made").is_dir()
    resp = await jp_fetch(
        "pai",
        "api",
        "storage",
        claim,
        "rest",
        "f.bin",
        method="PATCH",
        body=json.dumps({"path": "rest/made/g.bin"}),
    )
    assert json.loads(resp.body)["path"] == "rest/made/g.bin"
    resp = await jp_fetch("pai", "api", "storage", claim, "rest", params={"archive": "zip"})
    with zipfile.ZipFile(io.BytesIO(resp.body)) as z:
        names = [n.removeprefix("rest/") for n in z.namelist() if not n.endswith("/")]
        assert names == ["made/g.bin"] and z.read(z.namelist()[-1]) == data
    resp = await jp_fetch(
        "pai", "api", "storage", claim, "rest", method="DELETE", params={"recursive": "true"}
    )
    assert resp.code == 204 and not (volume.root / "rest").exists()


async def test_a_claim_mounted_here_is_written_without_a_pod(
    kube_cluster: TestCluster, volume: Volume
) -> None:
    b = await started(
        kube_cluster, volume.claim, storage_local_paths={volume.claim: str(volume.root)}
    )
    try:
        state = await b.write_storage(volume.claim, "here/f.txt", piece(b"local", 0, 5))
        assert state.complete and (volume.root / "here" / "f.txt").read_bytes() == b"local"
        moved = await b.move_storage(volume.claim, "here/f.txt", "here/g.txt")
        assert moved.path == "here/g.txt"
        with pytest.raises(Forbidden):
            await b.make_folder(volume.claim, "escape")
        await b.delete_storage(volume.claim, "here", recursive=True)
        assert not (volume.root / "here").exists()
        assert helper_pods(kube_cluster) == []
    finally:
        await b.close()
