"""Reaching a path inside a storage by directory file descriptors, and what a storage may
serve. Shared by the operations of :mod:`.storage_ops` (and shipped with them into the
Kubernetes storage helper pod): standard library only, Python 3.8 at run time.

Why descriptors: a storage is written by jobs at the same time, so a path checked and then
used again as a string can change in between (a folder swapped for a symbolic link moves
the server's file wherever the link points). Here the root is opened once and every path
is walked from it a component at a time: each folder opened with ``O_NOFOLLOW`` from the
descriptor of the one above, the last step done with ``dir_fd``. A symbolic link met on the
way is read (never followed by the kernel) and resolved here against the storage: a link
inside goes on from the root, one leading out (an absolute target elsewhere, ``..`` above
the root) is refused ("outside"). A swap after a folder was opened changes nothing: the
operation goes on in the folder that was checked.

What a storage serves (:class:`Rules`): hidden names (a component starting with ``.``, as
Jupyter's own ``ContentsManager.allow_hidden`` rule) only when ``hidden`` is on, and
never the ``protected`` folders (the Jupyter runtime directory, which holds the server's
token, and jupyter-pai's state directory, which holds job secrets and logs), nor anything
in them, hidden or not. Both are refused with the same answer whether or not the path
exists, and left out of listings and archives."""

from __future__ import annotations

import errno
import os
import stat
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the helper pod's Python may predate typing.Self
    from typing import Self

TEMP_PREFIX = "."
TEMP_SUFFIX = ".pai-upload"
#: A folder on the way down: never through a link, never inherited by a child process.
DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
#: A file to read: not through a link, and a FIFO planted there does not block the open.
READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
#: Links followed (and swaps retried) in one path at most, as the kernel's own limit.
MAX_HOPS = 40


class OpError(Exception):
    """A refused or failed operation. ``kind``: "badpath" (400: absolute, '..', NUL, a name
    too long), "outside" (403: leads out of the storage through a link), "hidden" (403: a
    hidden name, while hidden files are not served), "protected" (403: the runtime or
    state directory), "missing" (404), "exists" (409), "notempty" (409: a folder needs
    ``recursive``), "offset" (409: a piece does not start at ``received``), "notdir" (409),
    "isdir" (400), "range" (400: more bytes than the file's total), "full" (507:
    ENOSPC/EDQUOT), "readonly" (403: EROFS), "denied" (403: EACCES/EPERM)."""

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


def os_error(error: OSError, rel: str) -> OpError:
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


def outside(rel: str) -> OpError:
    return OpError("outside", f"path {rel!r} leads outside the storage (through a symbolic link)")


def is_upload_temp(name: str) -> bool:
    """Whether a file name is an upload's temporary file (listings hide them)."""
    return name.startswith(TEMP_PREFIX) and name.endswith(TEMP_SUFFIX) and len(name) > 12


def temp_name(name: str) -> str:
    """The temporary file of an upload to ``name``, in the same folder."""
    return TEMP_PREFIX + name + TEMP_SUFFIX


def path_parts(rel: str, field: str = "path") -> list[str]:
    if "\x00" in rel:
        raise OpError("badpath", f"{field} {rel!r} contains a NUL byte")
    if rel.startswith("/") or rel.startswith("\\"):
        raise OpError("badpath", f"{field} {rel!r} must be relative to the storage root")
    parts = [p for p in rel.replace("\\", "/").split("/") if p not in ("", ".")]
    if ".." in parts:
        raise OpError("badpath", f"{field} {rel!r} must not contain '..'")
    return parts


class Rules:
    """What a storage serves within its root: hidden names when ``hidden``; never the
    ``protected`` folders (``{absolute path: what it is}``, said in the refusal)."""

    def __init__(self, hidden: bool = False, protected: dict[str, str] | None = None) -> None:
        self.hidden = bool(hidden)
        self.protected = dict(protected or {})


def _split(path: str) -> list[str]:
    return [p for p in path.split("/") if p]


class _OpenFolder:
    """Holds an open folder's ``fd``, closed once (also as a context manager)."""

    fd: int

    def close(self) -> None:
        if self.fd >= 0:
            fd, self.fd = self.fd, -1
            os.close(fd)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class Spot(_OpenFolder):
    """Where a walk ended: ``fd``, the open folder holding ``name`` (None: the walk ended
    on the root, ``fd`` itself), and ``at``, that folder's parts inside the storage (links
    resolved). Closes ``fd`` as a context manager."""

    def __init__(self, fd: int, name: str | None, at: list[str]) -> None:
        self.fd, self.name, self.at = fd, name, at

    @property
    def parts(self) -> list[str]:
        return self.at + ([self.name] if self.name is not None else [])


class Tree(_OpenFolder):
    """A storage's root, opened once (a context manager), and its :class:`Rules`."""

    def __init__(self, root: str, rules: Rules | None = None) -> None:
        self.rules = rules or Rules()
        given = os.path.abspath(os.path.expanduser(root))
        self.real = os.path.realpath(given)
        # An absolute link may name the root as configured or as it really is.
        self._prefixes = [_split(self.real), _split(given)]
        try:
            # The root itself may be a link: the admin's setting, followed once.
            self.fd = os.open(self.real, DIR_FLAGS & ~os.O_NOFOLLOW)
        except OSError as error:
            said = f"the storage's folder is not there ({error.strerror})"
            raise OpError("missing", said) from None
        self._guarded: list[tuple[str, str]] = []
        self._ids: dict[tuple[int, int], str] = {}
        for path, what in self.rules.protected.items():
            if not path:
                continue  # "" would be the working folder: never what was meant
            real = os.path.realpath(os.path.expanduser(path))
            self._guarded.append((real, what))
            try:  # by identity too: the same folder reached by another path (a bind mount)
                st = os.stat(real)
                self._ids[(st.st_dev, st.st_ino)] = what
            except OSError:
                pass

    # -- the rules -----------------------------------------------------------------------

    def hides(self, name: str) -> bool:
        return not self.rules.hidden and name.startswith(".")

    def _refuse_hidden(self, name: str, rel: str, linked: bool) -> None:
        if self.hides(name):
            how = "leads to a hidden file through a link" if linked else "is hidden"
            raise OpError("hidden", f"path {rel!r} {how}: this server does not serve hidden files")

    def _protected(self, what: str, rel: str) -> OpError:
        return OpError("protected", f"path {rel!r} is in {what}, which is never served")

    def guard(self, fd: int, rel: str) -> None:
        """Refuses an open folder that is a protected one."""
        st = os.fstat(fd)
        what = self._ids.get((st.st_dev, st.st_ino))
        if what is not None:
            raise self._protected(what, rel)

    def protected_entry(self, parts: list[str], st: os.stat_result) -> bool:
        """Whether an entry of a listing or an archive (its parts, its ``lstat``) is a
        protected folder: such an entry is left out."""
        if stat.S_ISDIR(st.st_mode) and (st.st_dev, st.st_ino) in self._ids:
            return True
        here = os.path.join(self.real, *parts)
        return any(here == path for path, _ in self._guarded)

    def refuse_protected(self, parts: list[str], rel: str, whole: bool = False) -> None:
        """Refuses a path in a protected folder, and with ``whole`` (a delete, a move: all
        it holds goes with it) one that holds one."""
        here = os.path.join(self.real, *parts)
        for path, what in self._guarded:
            if here == path or here.startswith(path.rstrip("/") + "/"):
                raise self._protected(what, rel)
            if whole and path.startswith(here.rstrip("/") + "/"):
                raise OpError("protected", f"path {rel!r} holds {what}, which is never served")

    # -- walking -------------------------------------------------------------------------

    def walk(
        self,
        parts: list[str],
        rel: str,
        follow: bool = True,
        create: bool = False,
        avoid: tuple[int, int] | None = None,
    ) -> Spot:
        """Opens the folders of ``parts`` one by one from the root (``create``: missing
        ones are made, each looked at like any other) and returns the last one's
        :class:`Spot`. ``follow``: a last component that is a link is resolved too (else
        it is the spot's name, a link or not). The last component may be missing. Refused:
        a link out, a hidden or protected component (also one a link leads to), a file on
        the way ("notdir"), and, with ``avoid``, a folder of that identity on the way (a
        folder moved into itself)."""
        todo = list(parts)
        at: list[str] = []
        fd = os.dup(self.fd)
        hops = 0
        linked = False
        try:
            while todo:
                name = todo[0]
                self._refuse_hidden(name, rel, linked)
                last = len(todo) == 1
                if last and not follow:
                    return Spot(fd, name, at)
                try:
                    st = os.stat(name, dir_fd=fd, follow_symlinks=False)
                except FileNotFoundError:
                    if last:
                        return Spot(fd, name, at)
                    if not create:
                        missing = "/".join(parts[:-1])
                        raise OpError("missing", f"no folder {missing!r} in the storage") from None
                    hops += 1
                    if hops > MAX_HOPS:
                        raise OpError("missing", f"no folder for {rel!r}") from None
                    try:
                        os.mkdir(name, dir_fd=fd)
                    except FileExistsError:
                        pass  # made meanwhile: looked at below like any other
                    except OSError as error:
                        raise os_error(error, rel) from None
                    continue
                except OSError as error:
                    raise os_error(error, rel) from None
                if stat.S_ISLNK(st.st_mode):
                    hops += 1
                    if hops > MAX_HOPS:
                        raise outside(rel)
                    try:
                        target = os.readlink(name, dir_fd=fd)
                    except OSError:
                        continue  # changed meanwhile: looked at again
                    todo = self._through(at, target, rel) + todo[1:]
                    os.close(fd)
                    fd = -1  # the walk starts again from the root
                    fd, at, linked = os.dup(self.fd), [], True
                    continue
                if last:
                    return Spot(fd, name, at)
                if not stat.S_ISDIR(st.st_mode):
                    raise OpError("notdir", f"{name!r} in {rel!r} is a file, not a folder")
                try:
                    sub = os.open(name, DIR_FLAGS, dir_fd=fd)
                except OSError as error:
                    swapped = error.errno in (errno.ELOOP, errno.ENOTDIR, errno.ENOENT)
                    if swapped and hops < MAX_HOPS:
                        hops += 1
                        continue  # swapped for a link or a file meanwhile: looked at again
                    raise os_error(error, rel) from None
                try:
                    self.guard(sub, rel)
                    if avoid is not None:
                        st = os.fstat(sub)
                        if (st.st_dev, st.st_ino) == avoid:
                            raise OpError("badpath", "a folder cannot be moved into itself")
                except BaseException:
                    os.close(sub)
                    raise
                os.close(fd)
                fd = sub
                at.append(name)
                todo.pop(0)
            return Spot(fd, None, at)
        except BaseException:
            if fd >= 0:
                os.close(fd)
            raise

    def _through(self, at: list[str], target: str, rel: str) -> list[str]:
        """The parts inside the storage a link in folder ``at`` leads to (lexically: the
        link's own text, never the kernel's view of it)."""
        if target.startswith("/"):
            whole: list[str] = []
            for p in target.split("/"):
                if p == "..":
                    if whole:
                        whole.pop()
                elif p not in ("", "."):
                    whole.append(p)
            for prefix in self._prefixes:
                if whole[: len(prefix)] == prefix:
                    return whole[len(prefix) :]
            raise outside(rel)
        out = list(at)
        for p in target.split("/"):
            if p == "..":
                if not out:
                    raise outside(rel)
                out.pop()
            elif p not in ("", "."):
                out.append(p)
        return out

    def open_folder(self, spot: Spot, rel: str) -> int:
        """The folder a spot names (the root when it names none), opened and checked."""
        if spot.name is None:
            fd = os.dup(spot.fd)
        else:
            try:
                fd = os.open(spot.name, DIR_FLAGS, dir_fd=spot.fd)
            except FileNotFoundError:
                raise OpError("missing", f"no folder {rel!r}") from None
            except NotADirectoryError:
                raise OpError("notdir", f"{rel!r} is a file, not a folder") from None
            except OSError as error:
                raise os_error(error, rel) from None
        try:
            self.guard(fd, rel)
        except BaseException:
            os.close(fd)
            raise
        return fd

    def stat_shown(self, fd: int, name: str, at: list[str]) -> os.stat_result | None:
        """What an entry of folder ``fd`` (parts ``at``) is, a link inside resolved; None
        for one a listing or an archive leaves out: hidden, protected, or a link out, to a
        hidden or protected path, or to nothing."""
        if is_upload_temp(name) or self.hides(name):
            return None
        rel = "/".join([*at, name])
        try:
            st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            if stat.S_ISLNK(st.st_mode):
                with self.walk([*at, name], rel) as spot:
                    self.refuse_protected(spot.parts, rel)
                    if spot.name is None:
                        st = os.fstat(spot.fd)
                    else:
                        st = os.stat(spot.name, dir_fd=spot.fd, follow_symlinks=False)
                    if stat.S_ISLNK(st.st_mode):
                        return None  # changed meanwhile
                    target = spot.parts
            else:
                target = [*at, name]
        except (OSError, OpError):
            return None
        return None if self.protected_entry(target, st) else st


def scan(fd: int) -> list[str]:
    """The names in open folder ``fd``, sorted."""
    with os.scandir(fd) as entries:
        return sorted(e.name for e in entries)


def remove_tree(tree: Tree, dir_fd: int, name: str, rel: str) -> None:
    """Deletes folder ``name`` of ``dir_fd`` with all it holds, never through a link (a
    link is deleted itself) and never a protected folder."""
    fd = os.open(name, DIR_FLAGS, dir_fd=dir_fd)
    try:
        tree.guard(fd, rel)
        for child in scan(fd):
            st = os.stat(child, dir_fd=fd, follow_symlinks=False)
            if stat.S_ISDIR(st.st_mode):
                remove_tree(tree, fd, child, rel)
            else:
                os.unlink(child, dir_fd=fd)
    finally:
        os.close(fd)
    os.rmdir(name, dir_fd=dir_fd)


def copy_tree(tree: Tree, src_fd: int, src: str, dst_fd: int, dst: str, rel: str) -> None:
    """Copies ``src`` of folder ``src_fd`` to a new ``dst`` of ``dst_fd`` (another file
    system: no rename there) without following any link: a link is copied as a link,
    anything but files, folders and links is left out. Metadata as ``shutil.copy2``: mode
    and times."""
    st = os.stat(src, dir_fd=src_fd, follow_symlinks=False)
    mode = stat.S_IMODE(st.st_mode)
    if stat.S_ISLNK(st.st_mode):
        os.symlink(os.readlink(src, dir_fd=src_fd), dst, dir_fd=dst_fd)
    elif stat.S_ISDIR(st.st_mode):
        sfd = os.open(src, DIR_FLAGS, dir_fd=src_fd)
        try:
            tree.guard(sfd, rel)
            os.mkdir(dst, 0o700, dir_fd=dst_fd)
            dfd = os.open(dst, DIR_FLAGS, dir_fd=dst_fd)
            try:
                for child in scan(sfd):
                    copy_tree(tree, sfd, child, dfd, child, rel)
                os.fchmod(dfd, mode)
                os.utime(dfd, ns=(st.st_atime_ns, st.st_mtime_ns))
            finally:
                os.close(dfd)
        finally:
            os.close(sfd)
    elif stat.S_ISREG(st.st_mode):
        rfd = os.open(src, READ_FLAGS, dir_fd=src_fd)
        try:
            if not stat.S_ISREG(os.fstat(rfd).st_mode):
                return  # swapped meanwhile
            flags = (
                os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
            )
            wfd = os.open(dst, flags, 0o600, dir_fd=dst_fd)
            try:
                while True:
                    data = os.read(rfd, 1024 * 1024)
                    if not data:
                        break
                    view = memoryview(data)
                    while view:
                        view = view[os.write(wfd, view) :]
                os.fchmod(wfd, mode)
                os.utime(wfd, ns=(st.st_atime_ns, st.st_mtime_ns))
            finally:
                os.close(wfd)
        finally:
            os.close(rfd)


def remove_any(tree: Tree, dir_fd: int, name: str, rel: str) -> None:
    """Deletes ``name`` of ``dir_fd``, a folder with all it holds."""
    st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    if stat.S_ISDIR(st.st_mode):
        remove_tree(tree, dir_fd, name, rel)
    else:
        os.unlink(name, dir_fd=dir_fd)


def quietly(call: Any, *args: Any, **kwargs: Any) -> None:
    try:
        call(*args, **kwargs)
    except OSError:
        pass
