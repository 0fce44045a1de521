"""The storage operations both backends share (storage_ops): uploads in pieces through a
hidden temporary file, folders, moves, deletes and archives, none of which reaches outside
the storage's root by a path, ``..`` or a symbolic link planted in it."""

from __future__ import annotations

import io
import os
import stat
import tarfile
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from jupyter_pai.backends import storage_ops as ops
from jupyter_pai.backends.storage_ops import OpError
from tests.folders import snapshot


@pytest.fixture
def root(tmp_path: Path) -> Path:
    r = tmp_path / "storage"
    r.mkdir()
    return r


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    o = tmp_path / "outside"
    o.mkdir()
    (o / "secret.txt").write_text("not for you")
    (o / "sub").mkdir()
    return o


def kind_of(call: Callable[[], Any]) -> str:
    with pytest.raises(OpError) as caught:
        call()
    assert caught.value.message
    return caught.value.kind


def test_a_whole_file_is_written_under_its_name_with_parents_made(root: Path) -> None:
    state = ops.write_piece(str(root), "a/b/c.txt", 0, 5, [b"he", b"llo"])
    assert state == {"received": 5, "total": 5, "complete": True}
    assert (root / "a" / "b" / "c.txt").read_bytes() == b"hello"
    assert os.listdir(root / "a" / "b") == ["c.txt"]  # no temporary file left
    mode = stat.S_IMODE((root / "a" / "b" / "c.txt").stat().st_mode)
    assert mode & 0o600 == 0o600 and not mode & 0o111  # a normal file, not the temp's 0600
    assert ops.write_piece(str(root), "empty", 0, 0, []) == {
        "received": 0,
        "total": 0,
        "complete": True,
    }
    assert (root / "empty").read_bytes() == b""


def test_pieces_resume_where_the_upload_is_and_a_wrong_offset_is_refused(root: Path) -> None:
    (root / "data.bin").write_bytes(b"old content")
    os.chmod(root / "data.bin", 0o640)
    assert ops.write_piece(str(root), "data.bin", 0, 10, [b"01234"])["complete"] is False
    # Until complete the old file stays, and the bytes wait under a hidden name.
    assert (root / "data.bin").read_bytes() == b"old content"
    (temp,) = [n for n in os.listdir(root) if n != "data.bin"]
    assert ops.is_upload_temp(temp) and temp.startswith(".")
    assert stat.S_IMODE((root / temp).stat().st_mode) == 0o600
    assert ops.upload_received(str(root), "data.bin") == 5

    for offset in (3, 7):
        with pytest.raises(OpError) as caught:
            ops.write_piece(str(root), "data.bin", offset, 10, [b"xx"])
        assert caught.value.kind == "offset" and caught.value.received == 5
    assert ops.upload_received(str(root), "data.bin") == 5

    def cut() -> Iterator[bytes]:
        yield b"56"
        raise ConnectionError("the client went")

    with pytest.raises(Exception):  # noqa: B017 - the chunks' own error, any kind
        ops.write_piece(str(root), "data.bin", 5, 10, cut())
    assert ops.upload_received(str(root), "data.bin") == 7  # what arrived stays

    assert kind_of(lambda: ops.write_piece(str(root), "data.bin", 7, 10, [b"7890"])) == "range"
    done = ops.write_piece(str(root), "data.bin", 7, 10, [b"789"])
    assert done == {"received": 10, "total": 10, "complete": True}
    assert (root / "data.bin").read_bytes() == b"0123456789"
    assert stat.S_IMODE((root / "data.bin").stat().st_mode) == 0o640  # the replaced file's
    assert os.listdir(root) == ["data.bin"]
    assert ops.upload_received(str(root), "data.bin") == 0

    # Offset 0 starts over; a piece without an upload under way is refused.
    ops.write_piece(str(root), "data.bin", 0, 4, [b"ab"])
    ops.write_piece(str(root), "data.bin", 0, 4, [b"x"])
    assert ops.upload_received(str(root), "data.bin") == 1
    assert kind_of(lambda: ops.write_piece(str(root), "nothing", 2, 4, [b"x"])) == "offset"
    assert kind_of(lambda: ops.write_piece(str(root), "nothing", 5, 4, [])) == "range"


def test_a_folder_or_the_root_is_not_a_file(root: Path) -> None:
    (root / "dir").mkdir()
    (root / "file").write_text("x")
    assert kind_of(lambda: ops.write_piece(str(root), "dir", 0, 1, [b"x"])) == "isdir"
    assert kind_of(lambda: ops.write_piece(str(root), "", 0, 1, [b"x"])) == "isdir"
    assert kind_of(lambda: ops.write_piece(str(root), "file/x", 0, 1, [b"x"])) == "notdir"
    assert kind_of(lambda: ops.write_piece(str(root), ".a.pai-upload", 0, 1, [b"x"])) == "badpath"


def test_folders_moves_and_deletes(root: Path) -> None:
    made = ops.make_folder(str(root), "x/y/z")
    assert made["name"] == "z" and made["path"] == "x/y/z" and made["dir"] is True
    assert ops.make_folder(str(root), "x/y/z")["path"] == "x/y/z"  # already there: fine
    (root / "x" / "f.txt").write_text("f")
    assert kind_of(lambda: ops.make_folder(str(root), "x/f.txt")) == "exists"

    moved = ops.move(str(root), "x/f.txt", "elsewhere/g.txt")
    assert moved["path"] == "elsewhere/g.txt" and moved["size"] == 1 and not moved["dir"]
    assert (root / "elsewhere" / "g.txt").read_text() == "f"
    assert kind_of(lambda: ops.move(str(root), "x", "elsewhere/g.txt")) == "exists"
    assert kind_of(lambda: ops.move(str(root), "x", "x/y/inside")) == "badpath"
    assert kind_of(lambda: ops.move(str(root), "nope", "other")) == "missing"
    with pytest.raises(OpError) as caught:
        ops.move(str(root), "x", "elsewhere/g.txt")
    assert caught.value.message.startswith("to ")  # said of ``to``
    assert ops.move(str(root), "x", "renamed")["path"] == "renamed"

    assert kind_of(lambda: ops.delete(str(root), "renamed", recursive=False)) == "notempty"
    assert (root / "renamed" / "y" / "z").is_dir()
    ops.delete(str(root), "renamed", recursive=True)
    ops.delete(str(root), "elsewhere/g.txt", recursive=False)
    ops.delete(str(root), "elsewhere", recursive=False)
    assert os.listdir(root) == []
    assert kind_of(lambda: ops.delete(str(root), "gone", recursive=True)) == "missing"
    assert kind_of(lambda: ops.delete(str(root), "", recursive=True)) == "badpath"
    assert kind_of(lambda: ops.delete(str(root), ".", recursive=True)) == "badpath"


def test_a_link_inside_the_storage_is_deleted_or_moved_itself_not_its_target(root: Path) -> None:
    (root / "target").mkdir()
    (root / "target" / "kept.txt").write_text("kept")
    os.symlink(root / "target", root / "shortcut")
    ops.move(str(root), "shortcut", "renamed-link")
    assert (root / "renamed-link").is_symlink()
    ops.delete(str(root), "renamed-link", recursive=True)
    assert (root / "target" / "kept.txt").read_text() == "kept"
    # A write through a link to a file inside lands in that file.
    os.symlink("target/kept.txt", root / "file-link")
    ops.write_piece(str(root), "file-link", 0, 3, [b"new"])
    assert (root / "target" / "kept.txt").read_text() == "new" and (root / "file-link").is_symlink()


BAD_PATHS = ["../x", "a/../../x", "/etc/passwd", "\\etc", "a\x00b", "..", "a/.."]


@pytest.mark.parametrize("bad", BAD_PATHS)
def test_paths_that_lead_up_or_are_absolute_are_refused_by_every_call(root: Path, bad: str) -> None:
    (root / "a").mkdir()
    (root / "f").write_text("f")
    r = str(root)
    calls: list[Callable[[], Any]] = [
        lambda: ops.write_piece(r, bad, 0, 1, [b"x"]),
        lambda: ops.upload_received(r, bad),
        lambda: ops.make_folder(r, bad),
        lambda: ops.move(r, bad, "moved"),
        lambda: ops.move(r, "f", bad),
        lambda: ops.delete(r, bad, recursive=True),
        lambda: ops.archive(r, bad, "zip"),
    ]
    for call in calls:
        assert kind_of(call) == "badpath"
    assert snapshot(root) == {"a": None, "f": b"f"}


def test_a_link_planted_to_the_outside_is_refused_by_every_write_and_archive(
    root: Path, outside: Path
) -> None:
    os.symlink(outside, root / "escape")
    os.symlink(outside / "secret.txt", root / "leak.txt")
    os.symlink(outside / "made-by-link.txt", root / "dangling")
    (root / "mine.txt").write_text("mine")
    before = snapshot(outside)
    r = str(root)
    calls: dict[str, Callable[[], Any]] = {
        "write into": lambda: ops.write_piece(r, "escape/new.txt", 0, 1, [b"x"]),
        "write deep": lambda: ops.write_piece(r, "escape/sub/deeper/new.txt", 0, 1, [b"x"]),
        "write over": lambda: ops.write_piece(r, "leak.txt", 0, 1, [b"x"]),
        "write dangling": lambda: ops.write_piece(r, "dangling", 0, 1, [b"x"]),
        "resume": lambda: ops.write_piece(r, "escape/secret.txt", 1, 3, [b"x"]),
        "received": lambda: ops.upload_received(r, "escape/secret.txt"),
        "mkdir": lambda: ops.make_folder(r, "escape/newdir"),
        "mkdir deep": lambda: ops.make_folder(r, "escape/sub/a/b"),
        "move out": lambda: ops.move(r, "mine.txt", "escape/mine.txt"),
        "move in": lambda: ops.move(r, "escape/secret.txt", "stolen.txt"),
        "move link": lambda: ops.move(r, "leak.txt", "renamed.txt"),
        "move onto link": lambda: ops.move(r, "mine.txt", "escape"),
        "delete inside": lambda: ops.delete(r, "escape/secret.txt", recursive=False),
        "delete tree": lambda: ops.delete(r, "escape/sub", recursive=True),
        "delete link": lambda: ops.delete(r, "escape", recursive=True),
        "archive": lambda: ops.archive(r, "escape", "zip"),
        "archive tar": lambda: ops.archive(r, "escape", "tar.gz"),
    }
    kinds = {what: kind_of(call) for what, call in calls.items()}
    assert kinds == dict.fromkeys(calls, "outside")
    assert snapshot(outside) == before
    assert (root / "mine.txt").read_text() == "mine"

    # A temp file name made a link to the outside is never written through.
    os.symlink(outside / "via-temp", root / ".upload.bin.pai-upload")
    assert kind_of(lambda: ops.write_piece(r, "upload.bin", 0, 2, [b"xy"])) == "outside"
    assert kind_of(lambda: ops.write_piece(r, "upload.bin", 1, 2, [b"y"])) == "outside"
    assert not (outside / "via-temp").exists()


def test_archives_hold_the_folder_and_skip_links_leading_out(
    root: Path, outside: Path, tmp_path: Path
) -> None:
    (root / "proj" / "data" / "empty").mkdir(parents=True)
    (root / "proj" / "a.txt").write_text("alpha")
    (root / "proj" / "data" / "b.bin").write_bytes(os.urandom(3 * 1024 * 1024 + 7))
    (root / "proj" / "data" / "ü name.txt").write_text("unicode")
    os.symlink(outside, root / "proj" / "escape")
    os.symlink(outside / "secret.txt", root / "proj" / "leak.txt")
    os.symlink("a.txt", root / "proj" / "inner-link.txt")
    os.symlink(root / "proj", root / "proj" / "data" / "loop")
    (root / "proj" / ".partial.bin.pai-upload").write_bytes(b"half")
    expected = {
        "a.txt": b"alpha",
        "inner-link.txt": b"alpha",
        "data": None,
        "data/b.bin": (root / "proj" / "data" / "b.bin").read_bytes(),
        "data/empty": None,
        "data/ü name.txt": b"unicode",
    }
    for fmt in ("zip", "tar.gz"):
        blocks = list(ops.archive(str(root), "proj", fmt))
        assert len(blocks) > 1  # streamed, not one piece at the end
        data = b"".join(blocks)
        assert b"not for you" not in data
        unpacked = tmp_path / f"unpacked-{fmt}"
        if fmt == "zip":
            with zipfile.ZipFile(io.BytesIO(data)) as zf:
                assert zf.testzip() is None
                zf.extractall(unpacked)
        else:
            with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tf:
                tf.extractall(unpacked, filter="data")
        assert snapshot(unpacked) == expected, fmt
    assert kind_of(lambda: ops.archive(str(root), "proj/a.txt", "zip")) == "notdir"
    assert kind_of(lambda: ops.archive(str(root), "nope", "zip")) == "missing"
    assert kind_of(lambda: ops.archive(str(root), "proj", "rar")) == "badpath"
    whole = zipfile.ZipFile(io.BytesIO(b"".join(ops.archive(str(root), "", "zip"))))
    assert "proj/a.txt" in whole.namelist()


def test_entries_and_temp_names(root: Path) -> None:
    (root / "f.txt").write_text("abc")
    doc = ops.entry(str(root), "f.txt")
    assert doc["name"] == "f.txt" and doc["path"] == "f.txt" and doc["size"] == 3
    assert doc["dir"] is False and doc["mtime"] > 0
    assert ops.is_upload_temp(".f.txt.pai-upload")
    assert not ops.is_upload_temp("f.txt.pai-upload") and not ops.is_upload_temp(".pai-upload")
    assert not ops.is_upload_temp(".bashrc")


def test_a_protected_folder_is_never_served_nor_moved_with_what_holds_it(root: Path) -> None:
    """The state directory inside a storage, under a name that is not hidden: refused even
    where hidden files are served, left out of listings and archives, and neither it nor a
    folder holding it is deleted or moved."""
    (root / "work" / "state" / "jobs").mkdir(parents=True)
    (root / "work" / "state" / "jobs" / "spec.json").write_text("job-secret")
    (root / "work" / "mine.txt").write_text("mine")
    rules = ops.Rules(hidden=True, protected={str(root / "work" / "state"): "the state"})
    r = str(root)
    calls: dict[str, Callable[[], Any]] = {
        "read": lambda: ops.read(r, "work/state/jobs/spec.json", rules),
        "list": lambda: ops.read(r, "work/state", rules),
        "archive": lambda: ops.archive(r, "work/state", "zip", rules),
        "write": lambda: ops.write_piece(r, "work/state/jobs/new.json", 0, 1, [b"x"], rules),
        "mkdir": lambda: ops.make_folder(r, "work/state/x", rules),
        "delete": lambda: ops.delete(r, "work/state", True, rules),
        "delete holder": lambda: ops.delete(r, "work", True, rules),
        "move": lambda: ops.move(r, "work/state", "elsewhere", rules),
        "move holder": lambda: ops.move(r, "work", "elsewhere", rules),
        "move into": lambda: ops.move(r, "work/mine.txt", "work/state/mine.txt", rules),
    }
    assert {what: kind_of(call) for what, call in calls.items()} == dict.fromkeys(
        calls, "protected"
    )
    kind, entries, _ = ops.read(r, "work", rules)
    assert kind == "dir" and [e["name"] for e in entries] == ["mine.txt"]
    data = b"".join(ops.archive(r, "", "zip", rules))
    assert b"job-secret" not in data
    assert zipfile.ZipFile(io.BytesIO(data)).namelist() == ["work/", "work/mine.txt"]
    assert (root / "work" / "state" / "jobs" / "spec.json").read_text() == "job-secret"
