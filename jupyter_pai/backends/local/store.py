"""The local backend's state directory, shared safely by every process that uses it.

Layout::

    state_dir/lock                 flock held while scheduling state changes
    state_dir/active.json          ids of jobs not yet finished, in submission order
    state_dir/generation           the id of each job written, a line per write (``changed``)
    state_dir/jobs/<id>/job.json   JobRecord (state, tasks, allocation)
    state_dir/jobs/<id>/spec.json  the validated spec, secrets included (0600)
    state_dir/jobs/<id>/events.jsonl
    state_dir/jobs/<id>/stop       a stop was asked for
    state_dir/jobs/<id>/preempt    the job is being preempted (holds why)
    state_dir/jobs/<id>/logs/<role>-<index>.log        current attempt
    state_dir/jobs/<id>/logs/<role>-<index>.<n>.log    earlier attempts

Every write goes to a temporary file and is renamed into place, so a reader never sees a
half-written record and a process killed mid-write loses nothing that was committed.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...errors import InsufficientStorage

if TYPE_CHECKING:  # imported where used: a supervisor starts its tasks before pydantic loads
    from ..models import JobEvent
    from .records import JobRecord

#: Bytes of ``generation`` before it starts again (one per record write).
GENERATION_ROTATE = 1 << 20

# Job ids are "<user>~<name>": both parts are [A-Za-z0-9_-], so ids are safe path parts.


class StateStore:
    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)
        self.jobs_dir = self.root / "jobs"
        self.jobs_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        self._lock_path = self.root / "lock"

    # -- locking -------------------------------------------------------------------------

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Exclusive lock across processes (server, CLI, kernels, supervisors)."""
        fd = os.open(self._lock_path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)

    # -- paths ---------------------------------------------------------------------------

    def job_dir(self, job_id: str) -> Path:
        return self.jobs_dir / job_id

    def log_path(self, job_id: str, role: str, index: int, attempt: int | None = None) -> Path:
        name = f"{role}-{index}.log" if attempt is None else f"{role}-{index}.{attempt}.log"
        return self.job_dir(job_id) / "logs" / name

    def stop_marker(self, job_id: str) -> Path:
        return self.job_dir(job_id) / "stop"

    def preempt_marker(self, job_id: str) -> Path:
        """Holds why the job is being preempted, until its supervisor has requeued it."""
        return self.job_dir(job_id) / "preempt"

    # -- records -------------------------------------------------------------------------

    def exists(self, job_id: str) -> bool:
        return (self.job_dir(job_id) / "job.json").exists()

    def read_job(self, job_id: str) -> JobRecord:
        from .records import JobRecord

        return JobRecord.model_validate_json((self.job_dir(job_id) / "job.json").read_bytes())

    def write_job(self, record: JobRecord) -> None:
        write_atomic(self.job_dir(record.id) / "job.json", record.model_dump_json(indent=1))
        self.changed(record.id)

    def delete_job(self, job_id: str) -> None:
        shutil.rmtree(self.job_dir(job_id))
        self.changed(job_id)

    # -- generation ----------------------------------------------------------------------

    @contextlib.contextmanager
    def room(self) -> Iterator[None]:
        """A full disk under the state directory as a 507 naming it (ENOSPC, EDQUOT)."""
        try:
            yield
        except OSError as error:
            if not is_full(error):
                raise
            raise InsufficientStorage(
                f"the local state directory {self.root} is full (no space left on its disk): "
                "free space there and try again"
            ) from None

    def changed(self, job_id: str) -> None:
        """Count one change of job ``job_id``'s record, after it is on disk.

        Every process writing records appends the job's id as a line (``O_APPEND``: one
        short write, atomic, so the size only grows and no line is lost or torn). A reader
        that takes :meth:`generation` before reading records gets a tag no newer than what
        it read, and reads which records changed since its last look
        (:meth:`changes_since`) instead of all of them. Past ``GENERATION_ROTATE`` bytes
        the file is replaced by an empty one: a new inode, so the tag still changes and
        readers read everything again."""
        path = self.root / "generation"
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, f"{job_id}\n".encode())
            size = os.fstat(fd).st_size
        except OSError as error:
            if not is_full(error):
                raise
            # No room for a byte: a new modification time changes the tag all the same.
            os.utime(fd)
            return
        finally:
            os.close(fd)
        if size > GENERATION_ROTATE:
            write_atomic(path, "")

    def changes_since(
        self, seen: tuple[int, int] | None
    ) -> tuple[set[str] | None, tuple[int, int]]:
        """The ids of the records changed since position ``seen`` of the change journal
        (inode, offset), and the position now; None for the ids where they cannot be told
        (no position yet, a rotated journal, a change that wrote no line: a full disk)."""
        try:
            fd = os.open(self.root / "generation", os.O_RDONLY)
        except FileNotFoundError:
            return None, (0, 0)
        try:
            st = os.fstat(fd)
            now = (st.st_ino, st.st_size)
            if seen is None or seen[0] != st.st_ino or seen[1] > st.st_size:
                return None, now
            if seen[1] == st.st_size:
                return None, now  # the tag moved with no line written
            data = os.pread(fd, st.st_size - seen[1], seen[1])
        finally:
            os.close(fd)
        lines = data.decode(errors="replace").split("\n")
        ids = {line for line in lines[:-1] if line}
        if lines[-1] or any(line == "." or "/" in line for line in ids):
            return None, now  # a torn or old-style (one byte per change) journal
        return ids, now

    def generation(self) -> str:
        """A tag that changes whenever a job record is created, written or deleted (by any
        process): one ``stat``, whatever the number of jobs."""
        try:
            st = os.stat(self.root / "generation")
        except FileNotFoundError:
            return "0"
        return f"{st.st_ino}.{st.st_size}.{st.st_mtime_ns}"

    def read_spec(self, job_id: str) -> dict[str, Any]:
        data: dict[str, Any] = json.loads((self.job_dir(job_id) / "spec.json").read_bytes())
        return data

    def create_job(self, record: JobRecord, spec: dict[str, Any]) -> None:
        """Write the job's directory whole, then rename it into place (atomic)."""
        tmp = Path(tempfile.mkdtemp(prefix=f".new-{record.id}-", dir=self.jobs_dir))
        try:
            (tmp / "logs").mkdir()
            write_atomic(tmp / "spec.json", json.dumps(spec), mode=0o600)
            write_atomic(tmp / "job.json", record.model_dump_json(indent=1))
            (tmp / "events.jsonl").touch()
            os.chmod(tmp, 0o700)
            os.rename(tmp, self.job_dir(record.id))
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)  # nothing half-made is left
            raise
        self.changed(record.id)

    def job_ids(self) -> list[str]:
        return sorted(
            p.name
            for p in self.jobs_dir.iterdir()
            if not p.name.startswith(".") and (p / "job.json").exists()
        )

    def active_ids(self) -> list[str]:
        path = self.root / "active.json"
        if not path.exists():
            return []
        ids: list[str] = json.loads(path.read_bytes())
        return ids

    def write_active(self, ids: list[str]) -> None:
        write_atomic(self.root / "active.json", json.dumps(ids))

    # -- events --------------------------------------------------------------------------

    def add_event(
        self, job_id: str, reason: str, message: str, *, type: str = "Normal", source: str = "job"
    ) -> None:
        from ..models import JobEvent
        from .records import now

        event = JobEvent(time=now(), type=type, reason=reason, message=message, source=source)
        line = event.model_dump_json(by_alias=True) + "\n"
        # One short O_APPEND write per event: concurrent writers never interleave within a line.
        fd = os.open(
            self.job_dir(job_id) / "events.jsonl", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600
        )
        try:
            os.write(fd, line.encode())
        finally:
            os.close(fd)

    def read_events(self, job_id: str) -> list[JobEvent]:
        from ..models import JobEvent

        path = self.job_dir(job_id) / "events.jsonl"
        if not path.exists():
            return []
        events = []
        for line in path.read_text().splitlines():
            if line.strip():
                try:
                    events.append(JobEvent.model_validate_json(line))
                except ValueError:
                    continue  # a line cut short by a full disk
        return events


def rotate_log(log_path: Path) -> None:
    """Keep an attempt's log as ``<task>.<n>.log`` (``?attempt=n``) instead of appending to it."""
    if log_path.exists() and log_path.stat().st_size > 0:
        n = 0
        while log_path.with_suffix(f".{n}.log").exists():
            n += 1
        log_path.rename(log_path.with_suffix(f".{n}.log"))


def is_full(error: OSError) -> bool:
    return error.errno in (errno.ENOSPC, errno.EDQUOT)


def write_atomic(path: Path, text: str, mode: int = 0o600) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
