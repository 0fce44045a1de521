"""A storage folder as a ``zip`` or ``tar.gz`` archive, made while it is read (a folder's
download): what a listing shows, walked by descriptors as :mod:`.storage_walk` walks a
path. Standard library only, Python 3.8 at run time: shipped into the Kubernetes storage
helper pod with :mod:`.storage_ops`."""

from __future__ import annotations

import gzip
import os
import stat
import time
from collections.abc import Iterator
from typing import Any

from .storage_walk import (  # SHIPPED: replaced by storage_walk's source
    DIR_FLAGS,
    READ_FLAGS,
    OpError,
    Rules,
    Tree,
    path_parts,
    scan,
)

BLOCK = 1024 * 1024
ARCHIVES = ("zip", "tar.gz")
#: Entries of a zip archive above this size are written as ZIP64 (the file may still grow
#: while it is read; sizes are only known at its end on a writer that cannot seek).
ZIP64_FROM = 1 << 30


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


def _walk(
    tree: Tree, fd: int, at: list[str], inside: str = ""
) -> Iterator[tuple[str, os.stat_result, int]]:
    """(name in the archive, stat, descriptor: -1 for a folder, else the file opened for
    the time of the step) of everything in folder ``fd``: what listings leave out left out,
    links to files inside followed, links to folders skipped (they could loop). A folder's
    folders come first, then its files, then what each folder holds."""
    folders: list[tuple[str, os.stat_result]] = []
    files: list[tuple[str, bool]] = []
    for name in scan(fd):
        st = tree.stat_shown(fd, name, at)
        if st is None:
            continue
        try:
            linked = stat.S_ISLNK(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode)
        except OSError:
            continue  # gone meanwhile
        if stat.S_ISDIR(st.st_mode) and not linked:
            folders.append((name, st))
        elif stat.S_ISREG(st.st_mode):
            files.append((name, linked))
    for name, st in folders:
        yield inside + name, st, -1
    for name, linked in files:
        try:
            if linked:  # resolved again from the root, with every rule
                rel = "/".join([*at, name])
                with tree.walk([*at, name], rel) as spot:
                    tree.refuse_protected(spot.parts, rel)
                    file_fd = os.open(spot.name or ".", READ_FLAGS, dir_fd=spot.fd)
            else:
                file_fd = os.open(name, READ_FLAGS, dir_fd=fd)
        except (OSError, OpError):
            continue  # gone, changed or leading out meanwhile
        try:
            st = os.fstat(file_fd)
            if stat.S_ISREG(st.st_mode):
                os.set_blocking(file_fd, True)
                yield inside + name, st, file_fd
        finally:
            os.close(file_fd)
    for name, _ in folders:
        try:
            sub = os.open(name, DIR_FLAGS, dir_fd=fd)
        except OSError:
            continue  # gone or swapped for a link meanwhile
        try:
            try:
                tree.guard(sub, name)
            except OpError:
                continue
            yield from _walk(tree, sub, [*at, name], inside + name + "/")
        finally:
            os.close(sub)


def _file_blocks(fd: int) -> Iterator[bytes]:
    while True:
        data = os.read(fd, BLOCK)
        if not data:
            return
        yield data


class _Archive:
    """An archive's blocks, holding the storage and the folder open until the last block
    (or ``close``): the folder was checked when it was made."""

    def __init__(self, tree: Tree, fd: int, blocks: Iterator[bytes]) -> None:
        self.tree, self.fd, self.blocks = tree, fd, blocks

    def __iter__(self) -> _Archive:
        return self

    def __next__(self) -> bytes:
        try:
            return next(self.blocks)
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        close = getattr(self.blocks, "close", None)
        if close is not None:
            close()
        if self.fd >= 0:
            fd, self.fd = self.fd, -1
            os.close(fd)
        self.tree.close()

    def __del__(self) -> None:
        self.close()


def archive(root: str, rel: str, fmt: str, rules: Rules | None = None) -> Iterator[bytes]:
    """Folder ``rel`` as a ``zip`` or ``tar.gz`` archive, made while it is read: its
    entries are named relative to the folder. What a listing leaves out is left out. The
    folder is checked before the first block is asked for."""
    if fmt not in ARCHIVES:
        raise OpError("badpath", f"archive format {fmt!r} is not one of {', '.join(ARCHIVES)}")
    parts = path_parts(rel)
    tree = Tree(root, rules)
    try:
        with tree.walk(parts, rel) as spot:
            tree.refuse_protected(spot.parts, rel)
            fd = tree.open_folder(spot, rel)
            at = spot.parts
    except BaseException:
        tree.close()
        raise
    make = _zip_blocks if fmt == "zip" else _tar_blocks
    return _Archive(tree, fd, make(_walk(tree, fd, at)))


def _zip_info(name: str, st: os.stat_result) -> Any:
    """``zipfile.ZipInfo.from_file`` from a stat already taken (no path looked up again)."""
    import zipfile

    is_dir = stat.S_ISDIR(st.st_mode)
    date_time = time.localtime(st.st_mtime)[0:6]
    if date_time[0] < 1980:
        date_time = (1980, 1, 1, 0, 0, 0)
    elif date_time[0] > 2107:
        date_time = (2107, 12, 31, 23, 59, 59)
    info = zipfile.ZipInfo(name + "/" if is_dir else name, date_time)
    info.external_attr = (st.st_mode & 0xFFFF) << 16
    if is_dir:
        info.file_size = 0
        info.external_attr |= 0x10
    else:
        info.file_size = st.st_size
        info.compress_type = zipfile.ZIP_DEFLATED
    return info


def _zip_blocks(entries: Iterator[tuple[str, os.stat_result, int]]) -> Iterator[bytes]:
    import zipfile  # here: a server that never archives does not hold it

    sink = _Sink()
    with zipfile.ZipFile(sink, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as zf:
        for name, st, fd in entries:
            info = _zip_info(name, st)
            if fd < 0:
                zf.writestr(info, b"")
            else:
                big = st.st_size >= ZIP64_FROM
                with zf.open(info, "w", force_zip64=big) as out:
                    for data in _file_blocks(fd):
                        out.write(data)
                        if sink.size >= BLOCK:
                            yield sink.take()
            if sink.size >= BLOCK:
                yield sink.take()
    yield sink.take()


def _tar_blocks(entries: Iterator[tuple[str, os.stat_result, int]]) -> Iterator[bytes]:
    import tarfile  # here: a server that never archives does not hold it

    # The tar stream is written here, not by tarfile.addfile, which copies a whole file
    # before it returns: blocks go out while a big file is read.
    sink = _Sink()
    packed = gzip.GzipFile(fileobj=sink, mode="wb", compresslevel=6)
    written = 0
    for name, st, fd in entries:
        info = tarfile.TarInfo(name)
        info.mtime = int(st.st_mtime)
        info.mode = stat.S_IMODE(st.st_mode)
        if fd < 0:
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
            for data in _file_blocks(fd):
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
