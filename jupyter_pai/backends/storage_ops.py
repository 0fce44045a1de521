"""Reads and writes of a storage folder, and its archives: the operations both backends
share (the local backend calls them in a thread; the Kubernetes storage helper pod ships
this module, :mod:`.storage_walk` and :mod:`.storage_archive` as source and calls them in
its request threads).

Standard library only, and Python 3.8 at run time (the pod's image may be old): no
``X | Y`` types outside annotations. Every function takes the storage's ``root``, a path
relative to it and the :class:`Rules` of what it serves (default: no hidden file), and
reaches the path by :mod:`.storage_walk`: absolute paths, ``..`` and NUL are refused
("badpath"), every folder is opened from the one above without following links, a link is
followed only while it stays inside the root ("outside" otherwise), hidden and protected
paths are refused. Uploads go to a hidden temporary name in the target's folder and only
the last piece moves them under the final name, so a full volume or a cut connection
never leaves half a file there."""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterable
from typing import Any

from .storage_archive import (  # SHIPPED: replaced by storage_archive's source
    ARCHIVES,
    archive,
)
from .storage_walk import (  # SHIPPED: replaced by storage_walk's source
    READ_FLAGS,
    TEMP_PREFIX,
    TEMP_SUFFIX,
    OpError,
    Rules,
    Spot,
    Tree,
    copy_tree,
    is_upload_temp,
    os_error,
    path_parts,
    quietly,
    remove_any,
    remove_tree,
    scan,
    temp_name,
)

# What callers import from here (the archives are made by storage_archive).
__all__ = [
    "ARCHIVES",
    "TEMP_PREFIX",
    "TEMP_SUFFIX",
    "OpError",
    "PieceWriter",
    "Rules",
    "archive",
    "delete",
    "discard_upload",
    "entry",
    "is_upload_temp",
    "make_folder",
    "move",
    "read",
    "upload_received",
    "write_piece",
]

_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


def _doc(name: str, parts: list[str], st: os.stat_result) -> dict[str, Any]:
    is_dir = stat.S_ISDIR(st.st_mode)
    return {
        "name": name,
        "path": "/".join(parts),
        "dir": is_dir,
        "size": 0 if is_dir else st.st_size,
        "mtime": st.st_mtime,
    }


def _describe(tree: Tree, spot: Spot) -> dict[str, Any]:
    """``{"name", "path", "dir", "size", "mtime"}`` of what a spot names (a link inside the
    storage described by what it points at, one leading out by itself)."""
    if spot.name is None:
        return _doc(os.path.basename(tree.real), [], os.fstat(spot.fd))
    st = tree.stat_shown(spot.fd, spot.name, spot.at)
    if st is None:
        st = os.stat(spot.name, dir_fd=spot.fd, follow_symlinks=False)
    return _doc(spot.name, spot.parts, st)


def entry(root: str, rel: str, rules: Rules | None = None) -> dict[str, Any]:
    """:func:`_describe` of ``rel`` (a link not followed to find it)."""
    with Tree(root, rules) as tree, tree.walk(path_parts(rel), rel, follow=False) as spot:
        try:
            return _describe(tree, spot)
        except FileNotFoundError:
            raise OpError("missing", f"no file or folder {rel!r}") from None


# -- reads ---------------------------------------------------------------------------------


def read(root: str, rel: str, rules: Rules | None = None) -> tuple[str, Any, os.stat_result]:
    """What ``rel`` holds: ``("dir", entries, stat)`` for a folder (entries as
    :func:`entry`, hidden, protected and upload temp files left out, links out left out),
    ``("file", fd, stat)`` for a file, opened for reading (the caller closes ``fd``).
    Anything else (a FIFO, a device) is "missing"."""
    parts = path_parts(rel)
    with Tree(root, rules) as tree, tree.walk(parts, rel) as spot:
        tree.refuse_protected(spot.parts, rel)
        if spot.name is None:
            fd = os.dup(spot.fd)
        else:
            try:
                fd = os.open(spot.name, READ_FLAGS, dir_fd=spot.fd)
            except FileNotFoundError:
                raise OpError("missing", f"no file or folder {rel!r}") from None
            except OSError as error:
                raise os_error(error, rel) from None
        try:
            st = os.fstat(fd)
            if stat.S_ISDIR(st.st_mode):
                tree.guard(fd, rel)
                entries = _listing(tree, fd, spot.parts)
                os.close(fd)
                return "dir", entries, st
            if not stat.S_ISREG(st.st_mode):
                raise OpError("missing", f"{rel!r} is no regular file")
            os.set_blocking(fd, True)
            return "file", fd, st
        except BaseException:
            quietly(os.close, fd)
            raise


def _listing(tree: Tree, fd: int, at: list[str]) -> list[dict[str, Any]]:
    entries = []
    for name in scan(fd):
        st = tree.stat_shown(fd, name, at)
        if st is not None:
            entries.append(_doc(name, [*at, name], st))  # the link's name, not its target
    return entries


# -- uploads -------------------------------------------------------------------------------


def _upload_spot(tree: Tree, parts: list[str], rel: str, create: bool) -> Spot:
    """Where an upload to ``rel`` ends: its folder and name (a link inside followed)."""
    if not parts:
        raise OpError("isdir", "the storage's top folder is a folder, not a file")
    if is_upload_temp(parts[-1]):
        raise OpError("badpath", f"path {rel!r} is the name of an upload's temporary file")
    spot = tree.walk(parts, rel, create=create)
    try:
        tree.refuse_protected(spot.parts, rel)
        if spot.name is None:
            raise OpError("isdir", "the storage's top folder is a folder, not a file")
        try:
            st = os.stat(spot.name, dir_fd=spot.fd, follow_symlinks=False)
        except FileNotFoundError:
            return spot
        if stat.S_ISDIR(st.st_mode):
            raise OpError("isdir", f"{rel!r} is a folder")
        return spot
    except BaseException:
        spot.close()
        raise


def _file_mode(spot: Spot) -> int:
    """A replaced file keeps its mode; a new one gets what the umask gives any new file."""
    try:
        st = os.stat(spot.name or ".", dir_fd=spot.fd, follow_symlinks=False)
        if stat.S_ISREG(st.st_mode):
            return stat.S_IMODE(st.st_mode)
    except OSError:
        pass
    umask = 0o022
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("Umask:"):
                    umask = int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    return 0o666 & ~umask


def _upload_under_way(tree: Tree, rel: str) -> Spot | None:
    """Where an upload to ``rel`` would end, if its folder is there (None: it is not)."""
    try:
        return _upload_spot(tree, path_parts(rel), rel, create=False)
    except OpError as error:
        if error.kind in ("missing", "notdir"):
            return None
        raise


def upload_received(root: str, rel: str, rules: Rules | None = None) -> int:
    """How many bytes of an upload to ``rel`` wait in its temporary file (0: none)."""
    with Tree(root, rules) as tree:
        spot = _upload_under_way(tree, rel)
        if spot is None:
            return 0
        with spot:
            try:
                st = os.stat(temp_name(spot.name or ""), dir_fd=spot.fd, follow_symlinks=False)
            except FileNotFoundError:
                return 0
            except OSError as error:
                raise os_error(error, rel) from None
    return st.st_size if stat.S_ISREG(st.st_mode) else 0


def write_piece(
    root: str,
    rel: str,
    offset: int,
    total: int,
    chunks: Iterable[bytes],
    rules: Rules | None = None,
) -> dict[str, Any]:
    """Writes ``chunks`` at ``offset`` of the upload to ``rel`` (a file ``total`` bytes
    long) and, once all ``total`` bytes are there, moves it under its name. A piece must
    start at what was received ("offset" otherwise); offset 0 starts over. Bytes that
    arrived before the chunks ended early (a cut connection) stay for a resume.
    -> ``{"received", "total", "complete"}``."""
    piece = PieceWriter(root, rel, offset, total, rules)
    try:
        for chunk in chunks:
            piece.write(chunk)
    finally:
        piece.close()
    return piece.finish()


class PieceWriter:
    """:func:`write_piece` a step at a time, for a caller that must not hold a thread
    while it waits for the next chunk (the Jupyter server): each step is short and
    blocking. ``close()`` always; ``finish()`` after the last chunk. The temporary file
    is opened in the folder walked to; ``finish`` walks there again (no descriptor is
    kept between the steps) and moves it within that folder."""

    def __init__(
        self, root: str, rel: str, offset: int, total: int, rules: Rules | None = None
    ) -> None:
        if offset < 0 or total < 0 or offset > total:
            raise OpError("range", f"offset {offset} does not lie in a file of {total} bytes")
        self.root, self.rel, self.rules = root, rel, rules
        self.total, self.received = total, offset
        self.parts = path_parts(rel)
        self.fd = -1
        flags = os.O_WRONLY | os.O_NOFOLLOW | _CLOEXEC
        with Tree(root, rules) as tree, _upload_spot(tree, self.parts, rel, True) as spot:
            temp = temp_name(spot.name or "")
            try:
                if offset == 0:
                    self.fd = os.open(temp, flags | os.O_CREAT | os.O_TRUNC, 0o600, dir_fd=spot.fd)
                else:
                    self.fd = os.open(temp, flags, dir_fd=spot.fd)
                st = os.fstat(self.fd)
                if not stat.S_ISREG(st.st_mode):
                    raise OpError(
                        "outside", f"the upload's temporary file for {rel!r} is not a file"
                    )
                if st.st_size != offset:
                    raise OpError(
                        "offset",
                        f"the piece starts at byte {offset} but {st.st_size} bytes of {rel!r} "
                        "were received: send from there",
                        st.st_size,
                    )
                os.lseek(self.fd, offset, os.SEEK_SET)
            except FileNotFoundError:
                if offset == 0:  # its folder went meanwhile
                    raise OpError("missing", f"no folder for {rel!r}") from None
                raise OpError(
                    "offset", f"no upload to {rel!r} is under way: start at 0", 0
                ) from None
            except BaseException as error:
                self.close()
                if isinstance(error, OSError):
                    raise os_error(error, rel) from None
                raise

    def write(self, chunk: bytes) -> None:
        if self.received + len(chunk) > self.total:
            raise OpError("range", f"more than the {self.total} bytes the file has were sent")
        try:
            view = memoryview(chunk)
            while view:
                view = view[os.write(self.fd, view) :]
        except OSError as error:
            raise self._failed(error) from None
        self.received += len(chunk)

    def close(self) -> None:
        """Closes the temporary file (what arrived stays there for a resume)."""
        if self.fd >= 0:
            fd, self.fd = self.fd, -1
            os.close(fd)

    def finish(self) -> dict[str, Any]:
        """After the last chunk: the file moves under its name once all of it is there."""
        complete = self.received == self.total
        if complete:
            try:
                with Tree(self.root, self.rules) as tree:
                    with _upload_spot(tree, self.parts, self.rel, False) as spot:
                        temp = temp_name(spot.name or "")
                        fd = os.open(temp, os.O_WRONLY | os.O_NOFOLLOW | _CLOEXEC, dir_fd=spot.fd)
                        try:
                            if not stat.S_ISREG(os.fstat(fd).st_mode):
                                raise OpError(
                                    "outside", f"the upload to {self.rel!r} is not a file"
                                )
                            os.fsync(fd)
                            os.fchmod(fd, _file_mode(spot))
                        finally:
                            os.close(fd)
                        os.replace(temp, spot.name or "", src_dir_fd=spot.fd, dst_dir_fd=spot.fd)
            except OSError as error:
                raise self._failed(error) from None
        return {"received": self.received, "total": self.total, "complete": complete}

    def _failed(self, error: OSError) -> OpError:
        """A full volume keeps no part of the upload: it could not be finished anyway
        before something else is deleted, and its bytes take room others need."""
        failed = os_error(error, self.rel)
        if failed.kind == "full":
            self.close()
            try:
                discard_upload(self.root, self.rel, self.rules)
            except OpError:
                pass
        return failed


def discard_upload(root: str, rel: str, rules: Rules | None = None) -> None:
    """Deletes the bytes of an upload to ``rel`` under way (its temporary file), if any;
    the file under the name, if any, stays as it was."""
    with Tree(root, rules) as tree:
        spot = _upload_under_way(tree, rel)
        if spot is None:
            return
        with spot:
            quietly(os.unlink, temp_name(spot.name or ""), dir_fd=spot.fd)


# -- folders, moves, deletes ---------------------------------------------------------------


def make_folder(root: str, rel: str, rules: Rules | None = None) -> dict[str, Any]:
    """Creates folder ``rel`` and missing parents (an existing folder is fine; "exists"
    when a file is there)."""
    parts = path_parts(rel)
    with Tree(root, rules) as tree, tree.walk(parts, rel, create=True) as spot:
        tree.refuse_protected(spot.parts, rel)
        if spot.name is not None:
            try:
                os.mkdir(spot.name, dir_fd=spot.fd)
            except FileExistsError:
                st = os.stat(spot.name, dir_fd=spot.fd, follow_symlinks=False)
                if not stat.S_ISDIR(st.st_mode):
                    raise OpError("exists", f"a file {rel!r} is already there") from None
            except OSError as error:
                raise os_error(error, rel) from None
        return _describe(tree, spot)


def _final(tree: Tree, spot: Spot, rel: str) -> os.stat_result:
    """What a path to move or delete is (a link itself), refused when it is a link
    leading out of the storage (or to a path that is not served)."""
    try:
        st = os.stat(spot.name or ".", dir_fd=spot.fd, follow_symlinks=False)
    except FileNotFoundError:
        raise OpError("missing", f"no file or folder {rel!r}") from None
    except OSError as error:
        raise os_error(error, rel) from None
    if stat.S_ISLNK(st.st_mode):
        tree.walk(spot.parts, rel).close()
    return st


def move(root: str, rel: str, to: str, rules: Rules | None = None) -> dict[str, Any]:
    """Renames or moves ``rel`` to ``to`` in the same storage (a link is moved as a link);
    "exists" when something is at ``to``. Missing folders of ``to`` are made. Across file
    systems (one mounted inside the storage) it is copied, links as links, then deleted."""
    parts, to_parts = path_parts(rel), path_parts(to, "to")
    if not parts or not to_parts:
        raise OpError("badpath", "the storage's top folder cannot be moved or replaced")
    with Tree(root, rules) as tree, tree.walk(parts, rel, follow=False) as source:
        tree.refuse_protected(source.parts, rel, whole=True)
        st = _final(tree, source, rel)
        if is_upload_temp(to_parts[-1]):
            raise OpError("badpath", f"to {to!r} is the name of an upload's temporary file")
        # A folder cannot go inside itself (checked before any folder of ``to`` is made).
        avoid = (st.st_dev, st.st_ino) if stat.S_ISDIR(st.st_mode) else None
        try:
            dest = tree.walk(to_parts, to, follow=False, create=True, avoid=avoid)
            try:
                tree.refuse_protected(dest.parts, to, whole=True)
                try:
                    there = os.stat(dest.name or ".", dir_fd=dest.fd, follow_symlinks=False)
                except FileNotFoundError:
                    there = None
                if there is not None:
                    if stat.S_ISLNK(there.st_mode):
                        tree.walk(dest.parts, to).close()  # a link out is refused as such
                    raise OpError("exists", "something is already there")
            except BaseException:
                dest.close()
                raise
        except OpError as error:
            # Said as about ``to``: callers name that field (messages starting "to ").
            raise OpError(error.kind, f"to {to!r}: {error.message}") from None
        with dest:
            src_name, dst_name = source.name or "", dest.name or ""
            try:
                os.rename(src_name, dst_name, src_dir_fd=source.fd, dst_dir_fd=dest.fd)
            except OSError as error:
                if error.errno != errno.EXDEV:
                    raise os_error(error, rel) from None
                _move_across(tree, source, dest, rel)
            return _describe(tree, dest)


def _move_across(tree: Tree, source: Spot, dest: Spot, rel: str) -> None:
    src_name, dst_name = source.name or "", dest.name or ""
    try:
        copy_tree(tree, source.fd, src_name, dest.fd, dst_name, rel)
    except BaseException as error:
        try:  # no half copy left
            remove_any(tree, dest.fd, dst_name, rel)
        except (OSError, OpError):
            pass
        if isinstance(error, OSError):
            raise os_error(error, rel) from None
        raise
    try:
        remove_any(tree, source.fd, src_name, rel)
    except OSError as error:
        raise os_error(error, rel) from None


def delete(root: str, rel: str, recursive: bool, rules: Rules | None = None) -> None:
    """Deletes a file or a link (never what it points at), or a folder: an empty one, or
    with all it holds when ``recursive`` ("notempty" otherwise)."""
    parts = path_parts(rel)
    if not parts:
        raise OpError("badpath", "the storage's top folder cannot be deleted")
    with Tree(root, rules) as tree, tree.walk(parts, rel, follow=False) as spot:
        tree.refuse_protected(spot.parts, rel, whole=True)
        st = _final(tree, spot, rel)
        name = spot.name or ""
        try:
            if stat.S_ISDIR(st.st_mode):
                if recursive:
                    remove_tree(tree, spot.fd, name, rel)
                else:
                    os.rmdir(name, dir_fd=spot.fd)
            else:
                os.unlink(name, dir_fd=spot.fd)
        except OSError as error:
            raise os_error(error, rel) from None
