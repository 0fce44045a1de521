"""``client.storage(name)`` (:class:`jupyter_pai.notebook.storage.StorageClient`) on the
local backend and on a real Jupyter server's REST API: uploads in pieces, folders, resuming
a cut upload, listing, downloads (a folder as an archive), delete, folders, moves, a
read-only storage's refusal; and ``%pai upload / ls / download`` in a real kernel.

The server runs on the test's loop, so the blocking calls go through ``to_thread``."""

from __future__ import annotations

import asyncio
import io
import json
import os
import tarfile
from pathlib import Path
from typing import Any

import aiohttp
import nbformat
import pytest
import yarl
from nbclient import NotebookClient

from jupyter_pai import Client
from jupyter_pai.backends.storage_writes import OffsetConflict
from jupyter_pai.errors import Conflict, Forbidden, NotFound
from jupyter_pai.notebook.storage import StorageClient
from jupyter_pai.notebook.storage_files import unpack
from tests.notebook_run import error_of, text_of

from .test_client import client

__all__ = ["client"]  # the local and REST clients of test_client, shared

KB = 1024


@pytest.fixture
def readonly_root(tmp_path: Path) -> Path:
    root = tmp_path / "storage-data"
    (root / "sets").mkdir(parents=True)
    (root / "sets" / "train.csv").write_text("a,b\n1,2\n")
    return root


@pytest.fixture
def pai_extra_config(storage_root: Path, readonly_root: Path) -> dict[str, Any]:
    storages = {
        "work": {"path": str(storage_root), "mountPath": "/mnt/work"},
        "data": {"path": str(readonly_root), "mountPath": "/mnt/data", "readOnly": True},
    }
    return {"LocalBackend": {"stop_grace_seconds": 2, "storages_config": storages}}


def pattern(size: int, seed: int = 0) -> bytes:
    """Bytes whose every piece differs from the others (a misplaced piece shows)."""
    return bytes((i * 7 + i // 251 + seed) % 256 for i in range(size))


async def test_upload_a_file_in_pieces(
    client: Client, storage_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    work = client.storage("work")
    assert isinstance(work, StorageClient)
    src = tmp_path / "blob.bin"
    body = pattern(10 * KB + 123)
    src.write_bytes(body)
    done = await asyncio.to_thread(work.upload, src, "in/", piece_mb=2 * KB / 2**20)
    assert [(f.path, f.size, f.sent) for f in done] == [("in/blob.bin", len(body), len(body))]
    assert (storage_root / "in" / "blob.bin").read_bytes() == body
    assert capsys.readouterr().out.endswith("\rwork/in/blob.bin: 10.1 KB of 10.1 KB (100%)\n")
    # No temporary file is left beside it; another name for the same file replaces nothing.
    assert sorted(os.listdir(storage_root / "in")) == ["blob.bin"]
    again = await asyncio.to_thread(work.upload, src, "in/renamed.bin", progress=False)
    assert [f.path for f in again] == ["in/renamed.bin"] and capsys.readouterr().out == ""
    assert (storage_root / "in" / "renamed.bin").read_bytes() == body
    # An empty file goes too.
    (tmp_path / "empty").write_bytes(b"")
    await asyncio.to_thread(work.upload, tmp_path / "empty")
    assert (storage_root / "empty").read_bytes() == b""


async def test_upload_a_folder(client: Client, storage_root: Path, tmp_path: Path) -> None:
    src = tmp_path / "dataset"
    (src / "sub" / "deeper").mkdir(parents=True)
    (src / "nothing").mkdir()
    (src / "top.txt").write_text("top\n")
    (src / "sub" / "a.bin").write_bytes(pattern(5 * KB))
    (src / "sub" / "deeper" / "b.txt").write_text("b\n")
    (storage_root / "runs").mkdir()
    work = client.storage("work")
    # "runs" is a folder in the storage: the folder goes inside it under its own name.
    done = await asyncio.to_thread(work.upload, src, "runs", piece_mb=KB / 2**20)
    assert sorted(f.path for f in done) == [
        "runs/dataset/sub/a.bin",
        "runs/dataset/sub/deeper/b.txt",
        "runs/dataset/top.txt",
    ]
    copy = storage_root / "runs" / "dataset"
    assert (copy / "sub" / "a.bin").read_bytes() == pattern(5 * KB)
    assert (copy / "sub" / "deeper" / "b.txt").read_text() == "b\n"
    assert (copy / "nothing").is_dir() and not list((copy / "nothing").iterdir())


async def raw_put(client: Client, storage_root: Path, path: str, piece: bytes, total: int) -> None:
    """The first piece of an upload, sent by hand (what a cut upload left)."""
    if client.url is None:
        from jupyter_pai.backends.base import UploadPiece

        async def chunks() -> Any:
            yield piece

        async def write() -> Any:
            # On the client's own loop, where its backend was started.
            backend = await client._connection.backend()  # type: ignore[attr-defined]
            piece_of = UploadPiece(offset=0, size=len(piece), total=total, chunks=chunks())
            return await backend.write_storage("work", path, piece_of)

        state = await client._loop.run_async(write())
        assert state.received == len(piece) and not state.complete
        return
    connection: Any = client._connection
    headers = {**connection._headers, "Content-Range": f"bytes 0-{len(piece) - 1}/{total}"}
    # As written: the base path (/a%40b/) must reach the server encoded.
    url = yarl.URL(f"{connection.base}storage/work/{path}", encoded=True)
    async with (
        aiohttp.ClientSession() as session,
        session.put(url, data=piece, headers=headers) as answer,
    ):
        assert answer.status == 200, await answer.text()
        assert (await answer.json())["received"] == len(piece)


async def test_a_cut_upload_resumes_from_what_arrived(
    client: Client, storage_root: Path, tmp_path: Path
) -> None:
    body = pattern(9 * KB)
    src = tmp_path / "big.bin"
    src.write_bytes(body)
    # The first 3 KB arrived before the cut; they are X's here, so a resumed upload (which
    # does not send them again) leaves them, and one that started over would not.
    await raw_put(client, storage_root, "big.bin", b"X" * 3 * KB, len(body))
    assert not (storage_root / "big.bin").exists()  # not under its name until complete
    work = client.storage("work")
    # A piece from elsewhere than what arrived: refused, naming where to go on from (the
    # REST answer's Upload-Offset header), which is where upload() would go on.
    piece = work._transport.put("big.bin", 5 * KB, len(body), [b"y" * KB])
    with pytest.raises(OffsetConflict, match=r"3072 bytes of 'big\.bin' were received") as conflict:
        await client._loop.run_async(piece)
    assert conflict.value.received == 3 * KB
    done = await asyncio.to_thread(work.upload, src, "big.bin", piece_mb=2 * KB / 2**20)
    assert [(f.size, f.sent) for f in done] == [(len(body), len(body) - 3 * KB)]
    assert (storage_root / "big.bin").read_bytes() == b"X" * 3 * KB + body[3 * KB :]
    assert sorted(os.listdir(storage_root)) == ["big.bin"]


async def test_a_cut_upload_longer_than_the_file_starts_over(
    client: Client, storage_root: Path, tmp_path: Path
) -> None:
    await raw_put(client, storage_root, "f.bin", b"X" * 5 * KB, 50 * KB)
    src = tmp_path / "f.bin"
    src.write_bytes(pattern(4 * KB))
    done = await asyncio.to_thread(client.storage("work").upload, src, progress=False)
    assert done[0].sent == 4 * KB
    assert (storage_root / "f.bin").read_bytes() == pattern(4 * KB)


async def test_ls_download_mkdir_mv_rm(client: Client, storage_root: Path, tmp_path: Path) -> None:
    (storage_root / "res" / "plots").mkdir(parents=True)
    (storage_root / "res" / "log.txt").write_text("loss 0.1\n")
    (storage_root / "res" / "plots" / "p.bin").write_bytes(pattern(70 * KB))
    work = client.storage("work")
    entries = await asyncio.to_thread(work.ls, "res")
    assert [(e.name, e.type) for e in entries] == [("log.txt", "file"), ("plots", "directory")]
    (one,) = await asyncio.to_thread(work.ls, "res/log.txt")
    assert (one.name, one.size) == ("log.txt", 9)

    out = tmp_path / "out"
    out.mkdir()
    written = await asyncio.to_thread(work.download, "res/log.txt", out)
    assert written == str(out / "log.txt") and (out / "log.txt").read_text() == "loss 0.1\n"
    written = await asyncio.to_thread(work.download, "res", out / "copy")
    assert (out / "copy" / "plots" / "p.bin").read_bytes() == pattern(70 * KB)
    assert (out / "copy" / "log.txt").read_text() == "loss 0.1\n"
    assert sorted(os.listdir(out)) == ["copy", "log.txt"]  # no archive or temp file left
    with pytest.raises(NotFound, match="nothing at 'res/none'"):
        await asyncio.to_thread(work.download, "res/none", out)

    made = await asyncio.to_thread(work.mkdir, "new/deep")
    assert made.type == "directory" and (storage_root / "new" / "deep").is_dir()
    moved = await asyncio.to_thread(work.mv, "res/log.txt", "new/deep/log.txt")
    assert moved.path == "new/deep/log.txt" and not (storage_root / "res" / "log.txt").exists()
    with pytest.raises(Conflict, match="recursive"):
        await asyncio.to_thread(work.rm, "res")
    assert (storage_root / "res" / "plots" / "p.bin").exists()
    await asyncio.to_thread(work.rm, "res", recursive=True)
    await asyncio.to_thread(work.rm, "new/deep/log.txt")
    assert sorted(os.listdir(storage_root)) == ["new"]
    with pytest.raises(NotFound):
        await asyncio.to_thread(work.rm, "res")
    with pytest.raises(NotFound):
        await asyncio.to_thread(client.storage("nowhere").ls)


async def test_a_read_only_storage_says_so(
    client: Client, readonly_root: Path, tmp_path: Path
) -> None:
    data = client.storage("data")
    src = tmp_path / "x.txt"
    src.write_text("x\n")
    for call in (
        lambda: data.upload(src, "sets/"),
        lambda: data.mkdir("more"),
        lambda: data.mv("sets/train.csv", "t.csv"),
        lambda: data.rm("sets", recursive=True),
    ):
        with pytest.raises(Forbidden, match="storage data is read-only"):
            await asyncio.to_thread(call)
    assert sorted(os.listdir(readonly_root / "sets")) == ["train.csv"]
    # Reads still work.
    written = await asyncio.to_thread(data.download, "sets", tmp_path / "sets")
    assert written == str(tmp_path / "sets")
    assert (tmp_path / "sets" / "train.csv").read_text() == "a,b\n1,2\n"


def test_unpack_refuses_members_leading_out(tmp_path: Path) -> None:
    for name, kind in (("../evil.txt", tarfile.REGTYPE), ("/abs.txt", tarfile.REGTYPE)):
        archive = tmp_path / "a.tar.gz"
        with tarfile.open(archive, "w:gz") as tar:
            ok = tarfile.TarInfo("fine.txt")
            ok.size = 2
            tar.addfile(ok, io.BytesIO(b"ok"))
            bad = tarfile.TarInfo(name)
            bad.type, bad.size = kind, 1
            tar.addfile(bad, io.BytesIO(b"x"))
        with pytest.raises(Exception, match="leads outside"):
            unpack(str(archive), str(tmp_path / "dst"))
        assert not (tmp_path / "dst").exists() and not (tmp_path / "evil.txt").exists()
    with tarfile.open(archive, "w:gz") as tar:
        link = tarfile.TarInfo("link")
        link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
        tar.addfile(link)
    with pytest.raises(Exception, match="not a file or a folder"):
        unpack(str(archive), str(tmp_path / "dst"))
    assert not (tmp_path / "dst").exists()


MAGIC_CELLS = {
    "load": "%load_ext jupyter_pai",
    "upload": "%pai upload dataset work/inputs/",
    "upload-file": "done = %pai upload notes.txt work:inputs/renamed.txt --piece-mb 0.001\n"
    "print([(f.path, f.size) for f in done])",
    "ls": "%pai ls work/inputs",
    "storages": "%pai ls",
    "download": "%pai download work/inputs back",
    "bad-where": "%pai upload notes.txt /inputs",
    "missing-src": "%pai upload no-such-file work/inputs",
    "read-only": "%pai upload notes.txt data/sets/",
}


async def test_storage_magics_in_a_kernel(
    pai_state_dir: Path,
    tmp_path: Path,
    storage_root: Path,
    pai_extra_config: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The kernel's Client() reads the storages from jupyter_pai_config.json, as a user's does.
    conf = tmp_path / "jupyter-config"
    conf.mkdir()
    (conf / "jupyter_pai_config.json").write_text(json.dumps(pai_extra_config))
    monkeypatch.setenv("JUPYTER_CONFIG_DIR", str(conf))
    workdir = tmp_path / "nb"
    (workdir / "dataset" / "sub").mkdir(parents=True)
    (workdir / "dataset" / "a.txt").write_text("alpha\n")
    (workdir / "dataset" / "sub" / "b.bin").write_bytes(pattern(3 * KB))
    (workdir / "notes.txt").write_text("x" * 2500)

    nb = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell(code) for code in MAGIC_CELLS.values()]
    )
    for cell, key in zip(nb.cells, MAGIC_CELLS, strict=True):
        cell.id = key
    runner = NotebookClient(
        nb,
        timeout=120,
        kernel_name="python3",
        allow_errors=True,
        resources={"metadata": {"path": str(workdir)}},
    )
    await runner.async_execute()
    cells = {c.id: c for c in nb.cells}

    assert "uploaded 2 file(s), 3078 bytes to work" in text_of(cells["upload"])
    assert (storage_root / "inputs" / "dataset" / "sub" / "b.bin").read_bytes() == pattern(3 * KB)
    assert "[('inputs/renamed.txt', 2500)]" in text_of(cells["upload-file"])
    assert (storage_root / "inputs" / "renamed.txt").read_text() == "x" * 2500
    assert text_of(cells["ls"]).splitlines() == ["dataset/\t", "renamed.txt\t2500"]
    assert text_of(cells["storages"]).splitlines() == [
        "work\t/mnt/work\twritable",
        "data\t/mnt/data\tread-only",
    ]
    assert (workdir / "back" / "dataset" / "a.txt").read_text() == "alpha\n"
    assert (workdir / "back" / "renamed.txt").read_text() == "x" * 2500
    for key, said in (
        ("bad-where", "'/inputs' is not STORAGE/PATH"),
        ("missing-src", "no file or folder 'no-such-file'"),
    ):
        # IPython shows a UsageError as a short message on stderr, not a traceback.
        shown = text_of(cells[key])
        assert shown.startswith("UsageError: %pai upload: ") and said in shown, shown
    error = error_of(cells["read-only"])
    assert error["ename"] == "Forbidden" and "storage data is read-only" in error["evalue"], error
