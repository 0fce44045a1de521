"""Writes to a storage folder, and its archives: the operations both backends share (the
local backend calls them in a thread; the Kubernetes storage helper pod ships this module as
source and calls them in its request threads).

Standard library only, and Python 3.8 at run time (the pod's image may be old): no
``X | Y`` types outside annotations. Every function takes the storage's ``root`` and a path
relative to it, and resolves it inside ``root`` itself: absolute paths, ``..`` and NUL are
refused ("badpath"); the real path of every parent folder must lie inside the root, a final
component that is a symbolic link leading out is refused ("outside"), and the temporary
file of an upload is opened with ``O_NOFOLLOW``. Uploads go to a hidden temporary name in
the target's folder and only the last piece moves them under the final name, so a full
volume or a cut connection never leaves half a file there."""

from __future__ import annotations

import errno
import gzip
import os
import shutil
import stat
from collections.abc import Iterable, Iterator
from typing import Any

TEMP_PREFIX = "."
TEMP_SUFFIX = ".pai-upload"
BLOCK = 1024 * 1024
ARCHIVES = ("zip", "tar.gz")
#: Entries of a zip archive above this size are written as ZIP64 (the file may still grow
#: while it is read; sizes are only known at its end on a writer that cannot seek).
ZIP64_FROM = 1 << 30


class OpError(Exception):
    """A refused or failed operation. ``kind``: "badpath" (400: absolute, '..', NUL, a name
    too long), "outside" (403: leads out of the storage through a link), "missing" (404),
    "exists" (409), "notempty" (409: a folder needs ``recursive``), "offset" (409: a piece
    does not start at ``received``), "notdir" (409), "isdir" (400), "range" (400: more bytes
    than the file's total), "full" (507: ENOSPC/EDQUOT), "readonly" (403: EROFS), "denied"
    (403: EACCES/EPERM)."""

    def __init__(self, kind: str, message: str, received: int = 0) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.received = received


_ERRNO_KINDS = {
    errno.ENOENT: "missing",
    errno.EEXIST: "exists",
    errno.ENOTEMPTY: "notempty",
    errno.ENOTDIR: "notdir",
    errno.EISDIR: "isdir",
    errno.ENOSPC: "full",
    errno.EDQUOT: "full",
    errno.EROFS: "readonly",
    errno.EACCES: "denied",
    errno.EPERM: "denied",
    errno.ENAMETOOLONG: "badpath",
    errno.ELOOP: "outside",
}


def _os_error(error: OSError, rel: str) -> OpError:
    kind = _ERRNO_KINDS.get(error.errno or 0)
    words = {
        "missing": f"no file or folder {rel!r}",
        "exists": f"{rel!r} already exists",
        "notempty": f"folder {rel!r} is not empty: delete it with recursive",
        "notdir": f"a part of {rel!r} is a file, not a folder",
        "isdir": f"{rel!r} is a folder",
        "full": "the storage is full",
        "readonly": "the storage is mounted read-only",
        "denied": f"no permission for {rel!r}",
        "badpath": f"path {rel!r} has a name that is too long",
        "outside": f"path {rel!r} leads outside the storage (through a symbolic link)",
    }
    if kind is None:
        return OpError("os", f"{rel!r}: {error.strerror or error}")
    return OpError(kind, words[kind])


def is_upload_temp(name: str) -> bool:
    """Whether a file name is an upload's temporary file (listings hide them)."""
    return name.startswith(TEMP_PREFIX) and name.endswith(TEMP_SUFFIX) and len(name) > 12


def _inside(root: str, path: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _parts(rel: str, field: str = "path") -> list[str]:
    if "\x00" in rel:
        raise OpError("badpath", f"{field} {rel!r} contains a NUL byte")
    if rel.startswith("/") or rel.startswith("\\"):
        raise OpError("badpath", f"{field} {rel!r} must be relative to the storage root")
    parts = [p for p in rel.replace("\\", "/").split("/") if p not in ("", ".")]
    if ".." in parts:
        raise OpError("badpath", f"{field} {rel!r} must not contain '..'")
    return parts


def _real_root(root: str) -> str:
    return os.path.realpath(root)


def _parent(real_root: str, parts: list[str], rel: str, create: bool = False) -> str:
    """The real path of the folder holding ``parts[-1]``, inside the root; with ``create``
    missing folders are made one by one, each checked before the next."""
    current = real_root
    for name in parts[:-1]:
        step = os.path.join(current, name)
        if create and not os.path.lexists(step):
            try:
                os.mkdir(step)
            except FileExistsError:
                pass  # made meanwhile: checked below like any other
            except OSError as error:
                raise _os_error(error, rel) from None
        real = os.path.realpath(step)
        if not _inside(real_root, real):
            raise OpError("outside", f"path {rel!r} leads outside the storage (through a link)")
        if not os.path.exists(real):
            raise OpError("missing", f"no folder {'/'.join(parts[:-1])!r} in the storage")
        if not os.path.isdir(real):
            raise OpError("notdir", f"{name!r} in {rel!r} is a file, not a folder")
        current = real
    return current


def _final(real_root: str, parts: list[str], rel: str, create: bool = False) -> str:
    """The path of ``rel`` itself (a link not followed) after checking that its folder
    lies inside the root and that, if it is a link, it does not lead out."""
    if not parts:
        return real_root
    full = os.path.join(_parent(real_root, parts, rel, create), parts[-1])
    if os.path.islink(full) and not _inside(real_root, os.path.realpath(full)):
        raise OpError("outside", f"path {rel!r} leads outside the storage (through a link)")
    return full


def _relpath(real_root: str, full: str) -> str:
    rel = os.path.relpath(full, real_root)
    return "" if rel == "." else rel


def entry(root: str, full: str) -> dict[str, Any]:
    """``{"name", "path", "dir", "size", "mtime"}`` of ``full`` (a path under ``root``; a
    link inside the storage is described by what it points at)."""
    real_root = _real_root(root)
    st = os.stat(full)
    is_dir = stat.S_ISDIR(st.st_mode)
    return {
        "name": os.path.basename(full.rstrip(os.sep)) or os.path.basename(real_root),
        "path": _relpath(real_root, full),
        "dir": is_dir,
        "size": 0 if is_dir else st.st_size,
        "mtime": st.st_mtime,
    }


def _temp_of(target: str) -> str:
    folder, name = os.path.split(target)
    return os.path.join(folder, TEMP_PREFIX + name + TEMP_SUFFIX)


def _write_target(real_root: str, parts: list[str], rel: str, create: bool) -> str:
    """Where an upload to ``rel`` ends: the path, or the file a link inside points at."""
    if not parts:
        raise OpError("isdir", "the storage's top folder is a folder, not a file")
    if is_upload_temp(parts[-1]):
        raise OpError("badpath", f"path {rel!r} is the name of an upload's temporary file")
    full = _final(real_root, parts, rel, create)
    if os.path.islink(full):
        full = os.path.realpath(full)  # checked inside by _final
    if os.path.isdir(full):
        raise OpError("isdir", f"{rel!r} is a folder")
    return full


def _file_mode(target: str) -> int:
    """A replaced file keeps its mode; a new one gets what the umask gives any new file."""
    try:
        return stat.S_IMODE(os.stat(target).st_mode)
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


def upload_received(root: str, rel: str) -> int:
    """How many bytes of an upload to ``rel`` wait in its temporary file (0: none)."""
    real_root = _real_root(root)
    parts = _parts(rel)
    try:
        target = _write_target(real_root, parts, rel, create=False)
        st = os.lstat(_temp_of(target))
    except OpError as error:
        if error.kind in ("missing", "notdir"):
            return 0
        raise
    except FileNotFoundError:
        return 0
    except OSError as error:
        raise _os_error(error, rel) from None
    return st.st_size if stat.S_ISREG(st.st_mode) else 0


def write_piece(
    root: str, rel: str, offset: int, total: int, chunks: Iterable[bytes]
) -> dict[str, Any]:
    """Writes ``chunks`` at ``offset`` of the upload to ``rel`` (a file ``total`` bytes
    long) and, once all ``total`` bytes are there, moves it under its name. A piece must
    start at what was received ("offset" otherwise); offset 0 starts over. Bytes that
    arrived before the chunks ended early (a cut connection) stay for a resume.
    -> ``{"received", "total", "complete"}``."""
    piece = PieceWriter(root, rel, offset, total)
    try:
        for chunk in chunks:
            piece.write(chunk)
    finally:
        piece.close()
    return piece.finish()


class PieceWriter:
    """:func:`write_piece` a step at a time, for a caller that must not hold a thread
    while it waits for the next chunk (the Jupyter server): each step is short and
    blocking. ``close()`` always; ``finish()`` after the last chunk."""

    def __init__(self, root: str, rel: str, offset: int, total: int) -> None:
        if offset < 0 or total < 0 or offset > total:
            raise OpError("range", f"offset {offset} does not lie in a file of {total} bytes")
        self.rel, self.total, self.received = rel, total, offset
        real_root = _real_root(root)
        self.target = _write_target(real_root, _parts(rel), rel, create=True)
        self.temp = _temp_of(self.target)
        self.fd = -1
        flags = os.O_WRONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
        try:
            if offset == 0:
                self.fd = os.open(self.temp, flags | os.O_CREAT | os.O_TRUNC, 0o600)
            else:
                self.fd = os.open(self.temp, flags)
            st = os.fstat(self.fd)
            if not stat.S_ISREG(st.st_mode):
                raise OpError("outside", f"the upload's temporary file for {rel!r} is not a file")
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
            raise OpError("offset", f"no upload to {rel!r} is under way: start at 0", 0) from None
        except BaseException as error:
            self.close()
            if isinstance(error, OSError):
                raise _os_error(error, rel) from None
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
                fd = os.open(self.temp, os.O_WRONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
                try:
                    os.fsync(fd)
                    os.fchmod(fd, _file_mode(self.target))
                finally:
                    os.close(fd)
                os.replace(self.temp, self.target)
            except OSError as error:
                raise self._failed(error) from None
        return {"received": self.received, "total": self.total, "complete": complete}

    def _failed(self, error: OSError) -> OpError:
        """A full volume keeps no part of the upload: it could not be finished anyway
        before something else is deleted, and its bytes take room others need."""
        failed = _os_error(error, self.rel)
        if failed.kind == "full":
            self.close()
            _remove_quietly(self.temp)
        return failed


def _remove_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def make_folder(root: str, rel: str) -> dict[str, Any]:
    """Creates folder ``rel`` and missing parents (an existing folder is fine; "exists"
    when a file is there)."""
    real_root = _real_root(root)
    parts = _parts(rel)
    full = _final(real_root, parts, rel, create=True)
    try:
        os.mkdir(full)
    except FileExistsError:
        if not os.path.isdir(full):
            raise OpError("exists", f"a file {rel!r} is already there") from None
    except OSError as error:
        raise _os_error(error, rel) from None
    return entry(real_root, full)


def move(root: str, rel: str, to: str) -> dict[str, Any]:
    """Renames or moves ``rel`` to ``to`` in the same storage (a link is moved as a link);
    "exists" when something is at ``to``. Missing folders of ``to`` are made."""
    real_root = _real_root(root)
    parts, to_parts = _parts(rel), _parts(to, "to")
    if not parts or not to_parts:
        raise OpError("badpath", "the storage's top folder cannot be moved or replaced")
    source = _final(real_root, parts, rel)
    if not os.path.lexists(source):
        raise OpError("missing", f"no file or folder {rel!r}")
    if is_upload_temp(to_parts[-1]):
        raise OpError("badpath", f"to {to!r} is the name of an upload's temporary file")
    try:
        if os.path.isdir(source) and not os.path.islink(source):
            # A folder cannot go inside itself (checked before any folder of ``to`` is made).
            inner = os.path.join(real_root, *to_parts)
            if _inside(os.path.realpath(source), os.path.realpath(inner)):
                raise OpError("badpath", f"cannot move folder {rel!r} into itself")
        dest = _final(real_root, to_parts, to, create=True)
        if os.path.lexists(dest):
            raise OpError("exists", "something is already there")
    except OpError as error:
        # Said as about ``to``: callers name that field (messages starting "to ").
        raise OpError(error.kind, f"to {to!r}: {error.message}") from None
    try:
        os.rename(source, dest)
    except OSError as error:
        if error.errno != errno.EXDEV:
            raise _os_error(error, rel) from None
        try:  # another file system mounted inside the storage
            shutil.move(source, dest)
        except OSError as again:
            raise _os_error(again, rel) from None
    return entry(real_root, dest)


def delete(root: str, rel: str, recursive: bool) -> None:
    """Deletes a file or a link (never what it points at), or a folder: an empty one, or
    with all it holds when ``recursive`` ("notempty" otherwise)."""
    real_root = _real_root(root)
    parts = _parts(rel)
    if not parts:
        raise OpError("badpath", "the storage's top folder cannot be deleted")
    full = _final(real_root, parts, rel)
    try:
        if not os.path.islink(full) and os.path.isdir(full):
            if recursive:
                shutil.rmtree(full)  # never follows links inside (fd-based on Linux)
            else:
                os.rmdir(full)
        else:
            os.unlink(full)
    except OSError as error:
        raise _os_error(error, rel) from None


def discard_upload(root: str, rel: str) -> None:
    """Deletes the bytes of an upload to ``rel`` under way (its temporary file), if any;
    the file under the name, if any, stays as it was."""
    real_root = _real_root(root)
    parts = _parts(rel)
    try:
        target = _write_target(real_root, parts, rel, create=False)
    except OpError as error:
        if error.kind in ("missing", "notdir"):
            return
        raise
    _remove_quietly(_temp_of(target))


class _Sink:
    """A file-like writer that cannot seek: what an archive writes is collected here and
    handed out in blocks as it is made."""

    def __init__(self) -> None:
        self.parts: list[bytes] = []
        self.size = 0
        self.position = 0

    def write(self, data: bytes) -> int:
        data = bytes(data)  # zipfile and gzip may hand over a view of a buffer they reuse
        self.parts.append(data)
        self.size += len(data)
        self.position += len(data)
        return len(data)

    def tell(self) -> int:
        return self.position

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass

    def take(self) -> bytes:
        data = b"".join(self.parts)
        self.parts, self.size = [], 0
        return data


def _walk(real_root: str, folder: str) -> Iterator[tuple[str, str, os.stat_result]]:
    """(path, name in the archive, stat) of everything under ``folder``: links leading out
    skipped, links to files inside followed, links to folders inside skipped (they could
    loop), upload temp files skipped. Folders come before what they hold."""
    for current, dirs, files in os.walk(folder, followlinks=False):
        kept = []
        for name in sorted(dirs):
            path = os.path.join(current, name)
            if os.path.islink(path):
                continue
            try:
                st = os.stat(path)
            except OSError:
                continue  # gone meanwhile
            kept.append(name)
            yield path, os.path.relpath(path, folder), st
        dirs[:] = kept
        for name in sorted(files):
            if is_upload_temp(name):
                continue
            path = os.path.join(current, name)
            if os.path.islink(path):
                real = os.path.realpath(path)
                if not _inside(real_root, real) or not os.path.isfile(real):
                    continue
            try:
                st = os.stat(path)
            except OSError:
                continue  # gone meanwhile, or a dangling link
            if stat.S_ISREG(st.st_mode):
                yield path, os.path.relpath(path, folder), st


def _file_blocks(path: str) -> Iterator[bytes]:
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    with os.fdopen(fd, "rb") as f:
        while True:
            data = f.read(BLOCK)
            if not data:
                return
            yield data


def archive(root: str, rel: str, fmt: str) -> Iterator[bytes]:
    """Folder ``rel`` as a ``zip`` or ``tar.gz`` archive, made while it is read: its
    entries are named relative to the folder. Links leading out of the storage are left
    out. The folder is checked before the first block is asked for."""
    if fmt not in ARCHIVES:
        raise OpError("badpath", f"archive format {fmt!r} is not one of {', '.join(ARCHIVES)}")
    real_root = _real_root(root)
    parts = _parts(rel)
    full = _final(real_root, parts, rel)
    folder = os.path.realpath(full)
    if not os.path.exists(folder):
        raise OpError("missing", f"no folder {rel!r}")
    if not os.path.isdir(folder):
        raise OpError("notdir", f"{rel!r} is a file, not a folder")
    make = _zip_blocks if fmt == "zip" else _tar_blocks
    return make(real_root, folder)


def _zip_blocks(real_root: str, folder: str) -> Iterator[bytes]:
    import zipfile  # here: a server that never archives does not hold it

    sink = _Sink()
    with zipfile.ZipFile(sink, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as zf:
        for path, name, st in _walk(real_root, folder):
            if stat.S_ISDIR(st.st_mode):
                info = zipfile.ZipInfo.from_file(path, name, strict_timestamps=False)
                zf.writestr(info, b"")
            else:
                info = zipfile.ZipInfo.from_file(path, name, strict_timestamps=False)
                info.compress_type = zipfile.ZIP_DEFLATED
                big = st.st_size >= ZIP64_FROM
                with zf.open(info, "w", force_zip64=big) as out:
                    for data in _file_blocks(path):
                        out.write(data)
                        if sink.size >= BLOCK:
                            yield sink.take()
            if sink.size >= BLOCK:
                yield sink.take()
    yield sink.take()


def _tar_blocks(real_root: str, folder: str) -> Iterator[bytes]:
    import tarfile  # here: a server that never archives does not hold it

    # The tar stream is written here, not by tarfile.addfile, which copies a whole file
    # before it returns: blocks go out while a big file is read.
    sink = _Sink()
    packed = gzip.GzipFile(fileobj=sink, mode="wb", compresslevel=6)
    written = 0
    for path, name, st in _walk(real_root, folder):
        info = tarfile.TarInfo(name)
        info.mtime = int(st.st_mtime)
        info.mode = stat.S_IMODE(st.st_mode)
        if stat.S_ISDIR(st.st_mode):
            info.type = tarfile.DIRTYPE
            header = info.tobuf(tarfile.PAX_FORMAT, "utf-8", "surrogateescape")
            packed.write(header)
            written += len(header)
        else:
            info.size = st.st_size
            header = info.tobuf(tarfile.PAX_FORMAT, "utf-8", "surrogateescape")
            packed.write(header)
            written += len(header)
            left = st.st_size  # exactly what the header says: a file that grew is cut
            for data in _file_blocks(path):
                data = data[:left]
                packed.write(data)
                left -= len(data)
                written += len(data)
                if sink.size >= BLOCK:
                    yield sink.take()
                if not left:
                    break
            if left:  # it shrank while read
                packed.write(b"\0" * left)
                written += left
            padding = -st.st_size % tarfile.BLOCKSIZE
            packed.write(b"\0" * padding)
            written += padding
        if sink.size >= BLOCK:
            yield sink.take()
    end = 2 * tarfile.BLOCKSIZE
    end += -(written + end) % tarfile.RECORDSIZE
    packed.write(b"\0" * end)
    packed.close()
    yield sink.take()
