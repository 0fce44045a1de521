"""A folder swapped for a symbolic link between the check of a path and its use (a job
writing the same storage races the server): whatever the operation, nothing lands outside
the storage, nothing outside is deleted or read. The swap is injected at the first call of
the system call that uses the path (``os.rename``, the temporary file's ``os.open``, …), the
latest moment a path-based implementation could have checked the folder."""

from __future__ import annotations

import errno
import io
import os
import tarfile
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from jupyter_pai.backends import storage_ops as ops
from jupyter_pai.backends.storage_ops import OpError
from tests.folders import snapshot

REAL_RENAME = os.rename


@pytest.fixture
def root(tmp_path: Path) -> Path:
    r = tmp_path / "storage"
    (r / "sub").mkdir(parents=True)
    (r / "sub" / "kept.txt").write_text("kept")
    (r / "mine.py").write_text("print('from the storage')")
    return r


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """Stands in for ``~/.ipython/profile_default/startup`` of the server's user."""
    o = tmp_path / "startup"
    o.mkdir()
    (o / "victim.txt").write_text("the server's own file")
    (o / "secret.txt").write_text("not for you")
    return o


class Swap:
    """Replaces ``folder`` by a link to ``target`` (the real folder kept as ``<name>.old``)
    right before the first call of ``os.<name>`` that ``when`` accepts."""

    def __init__(
        self,
        monkeypatch: pytest.MonkeyPatch,
        folder: Path,
        target: Path,
        name: str,
        when: Callable[..., bool] = lambda *a, **k: True,
        then: Callable[..., Any] | None = None,
    ) -> None:
        self.folder, self.target, self.fired = folder, target, False
        real = getattr(os, name)

        def hooked(*args: Any, **kwargs: Any) -> Any:
            if not self.fired and when(*args, **kwargs):
                self.fired = True
                REAL_RENAME(folder, folder.with_name(folder.name + ".old"))
                os.symlink(target, folder)
            return (then or real)(*args, **kwargs)

        monkeypatch.setattr(os, name, hooked)


def attempt(call: Callable[[], Any]) -> Any:
    """The call's result, or the refusal (a refusal is as good as a move inside)."""
    try:
        return call()
    except OpError as error:
        return error


def test_a_move_whose_target_folder_is_swapped_lands_inside(
    root: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = snapshot(outside)
    swap = Swap(monkeypatch, root / "sub", outside, "rename")
    attempt(lambda: ops.move(str(root), "mine.py", "sub/evil.py"))
    assert swap.fired
    assert snapshot(outside) == before, "the moved file landed outside the storage"
    assert (root / "sub.old" / "evil.py").read_text() == "print('from the storage')"


def test_a_cross_device_move_copies_without_following_a_swapped_folder(
    root: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``os.rename`` says EXDEV (another file system mounted inside the storage): the copy
    that replaces it goes by descriptors, and copies links as links."""
    (root / "tree" / "deep").mkdir(parents=True)
    (root / "tree" / "deep" / "f.txt").write_text("f")
    os.symlink(outside / "secret.txt", root / "tree" / "leak")

    def exdev(*args: Any, **kwargs: Any) -> Any:
        raise OSError(errno.EXDEV, "Invalid cross-device link")

    before = snapshot(outside)
    swap = Swap(monkeypatch, root / "sub", outside, "rename", then=exdev)
    attempt(lambda: ops.move(str(root), "mine.py", "sub/evil.py"))
    assert swap.fired
    assert snapshot(outside) == before, "the copied file landed outside the storage"
    assert (root / "sub.old" / "evil.py").read_text() == "print('from the storage')"
    assert not (root / "mine.py").exists()

    # A folder across devices: copied with its link as a link, then removed.
    moved = ops.move(str(root), "tree", "copied")
    assert moved["path"] == "copied" and moved["dir"]
    assert (root / "copied" / "deep" / "f.txt").read_text() == "f"
    assert os.readlink(root / "copied" / "leak") == str(outside / "secret.txt")
    assert not (root / "tree").exists()
    assert snapshot(outside) == before


def test_an_upload_whose_folder_is_swapped_lands_inside(
    root: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = snapshot(outside)
    creates = lambda *a, **k: len(a) > 1 and bool(a[1] & os.O_CREAT)  # noqa: E731
    swap = Swap(monkeypatch, root / "sub", outside, "open", when=creates)
    attempt(lambda: ops.write_piece(str(root), "sub/evil.py", 0, 4, [b"evil"]))
    assert swap.fired
    assert snapshot(outside) == before, "the upload landed outside the storage"


def test_an_upload_finished_after_its_folder_is_swapped_lands_inside(
    root: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The last piece arrives after the swap: the finished file does not go through it."""
    before = snapshot(outside)
    ops.write_piece(str(root), "sub/evil.py", 0, 8, [b"evil"])
    REAL_RENAME(root / "sub", root / "sub.old")
    os.symlink(outside, root / "sub")
    attempt(lambda: ops.write_piece(str(root), "sub/evil.py", 4, 8, [b"code"]))
    assert snapshot(outside) == before, "the upload landed outside the storage"


def test_a_delete_whose_folder_is_swapped_deletes_nothing_outside(
    root: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (root / "sub" / "victim.txt").write_text("mine to delete")
    before = snapshot(outside)
    swap = Swap(monkeypatch, root / "sub", outside, "unlink")
    attempt(lambda: ops.delete(str(root), "sub/victim.txt", recursive=False))
    assert swap.fired
    assert snapshot(outside) == before, "a file outside the storage was deleted"


def test_a_recursive_delete_whose_folder_is_swapped_deletes_nothing_outside(
    root: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (root / "sub" / "tree" / "deep").mkdir(parents=True)
    (root / "sub" / "tree" / "deep" / "f.txt").write_text("f")
    (outside / "tree").mkdir()  # empty: a removal by path would take it
    before = snapshot(outside)
    # The first removal anywhere: by then the folder was checked and opened, or not.
    swap = Swap(monkeypatch, root / "sub", outside, "unlink")
    attempt(lambda: ops.delete(str(root), "sub/tree", recursive=True))
    assert swap.fired
    assert snapshot(outside) == before, "a file outside the storage was deleted"


@pytest.mark.parametrize("fmt", ["zip", "tar.gz"])
def test_an_archive_whose_subfolder_is_swapped_while_walked_holds_nothing_outside(
    root: Path, outside: Path, monkeypatch: pytest.MonkeyPatch, fmt: str
) -> None:
    (root / "sub" / "inner").mkdir()
    calls = [0]

    def second(*args: Any, **kwargs: Any) -> bool:
        calls[0] += 1
        return calls[0] == 2  # the storage's top folder was read: now the walk goes down

    swap = Swap(monkeypatch, root / "sub", outside, "scandir", when=second)
    blocks = attempt(lambda: list(ops.archive(str(root), "", fmt)))
    assert swap.fired
    if isinstance(blocks, OpError):
        return  # refused: nothing was read
    data = b"".join(blocks)
    assert b"not for you" not in data and b"the server's own file" not in data
    if fmt == "zip":
        names = zipfile.ZipFile(io.BytesIO(data)).namelist()
    else:
        names = tarfile.open(fileobj=io.BytesIO(data), mode="r:gz").getnames()
    assert not any("secret" in n or "victim" in n for n in names), names


def test_a_read_whose_folder_is_swapped_reads_nothing_outside(
    root: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (root / "sub" / "secret.txt").write_text("mine")
    final = lambda *a, **k: os.path.basename(str(a[0])) == "secret.txt"  # noqa: E731
    swap = Swap(monkeypatch, root / "sub", outside, "open", when=final)
    found = attempt(lambda: ops.read(str(root), "sub/secret.txt"))
    assert swap.fired
    if not isinstance(found, OpError):
        kind, fd = found[0], found[1]
        assert kind == "file"
        with os.fdopen(fd, "rb") as f:
            assert f.read() == b"mine"  # the folder as checked (now sub.old), never the link's
