"""Task logs streamed from the API server (``pods/log``) chunk by chunk, never buffered
whole; secrets' values are blanked line by line on the way through. A task's earlier
attempts are the pods it replaced and its container's previous instance."""

from __future__ import annotations

import base64
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from urllib.parse import quote

import aiohttp

from ...errors import BadRequest, NotFound
from ...spec.protocol import JobProtocol
from ...spec.render import MIN_SEARCHED_SECRET, redact_bytes
from ..base import LogQuery, LogStream
from .jobssh import needs_job_key
from .logcache import ENTRY_MAX_BYTES, EndedLogs
from .naming import JobNames
from .resources import CONFIG_MAP, SECRET
from .rest import ApiError, Rest, path, typed
from .states import JobView, Task


async def task_log(
    rest: Rest,
    namespace: str,
    job_id: str,
    job: JobProtocol,
    names: JobNames,
    view: JobView,
    query: LogQuery,
    *,
    ended: tuple[EndedLogs, Callable[[str], str | None]] | None = None,
) -> LogStream:
    """The log ``query`` asks for, of one task of a job as ``view`` shows it. ``ended``:
    the cache of ended logs, and what tells a pod's uid where its log is final."""
    role = query.role or next(iter(job.task_roles))
    task = next((t for t in view.tasks if t.role == role and t.index == query.index), None)
    if task is None:
        raise NotFound(f"job {job_id} has no task {role}-{query.index}")
    if query.attempt is not None and 0 <= query.attempt < len(task.archived_logs):
        try:
            archive = await rest.get(path(CONFIG_MAP, namespace, task.archived_logs[query.attempt]))
        except ApiError as error:
            raise typed(error) from None
        data = base64.b64decode((archive.get("binaryData") or {}).get("log") or "")
        return stored_log(data, query, role)
    if task.pod is None:
        return LogStream(size=0, chunks=_once(b""), role=role, index=query.index)
    if query.offset is not None and query.offset < 0:
        raise BadRequest("offset must be ≥ 0")
    pod, previous = attempt_pod(task, query.attempt, job_id)
    try:
        if (query.offset is not None or query.limit is not None) and query.tail is None:
            size, data = await ranged_pod_log(
                rest,
                namespace,
                pod,
                offset=query.offset or 0,
                limit=query.limit,
                previous=previous,
                secrets=await secret_values(rest, namespace, job, names),
            )
            return LogStream(size=size, chunks=_once(data), role=role, index=query.index)
        secrets = await secret_values(rest, namespace, job, names)
        keep = None
        # Only the latest pod's tail: the one whose phase tells whether its log is final.
        cacheable = pod == task.pod and query.tail is not None and not previous
        uid = ended[1](pod) if ended is not None and cacheable else None
        if ended is not None and uid is not None:
            cache, key = ended[0], (uid, query.tail, query.limit)
            kept = cache.get(key)
            if kept is not None:
                data = redact_bytes(kept, secrets)
                return LogStream(size=0, chunks=_once(data), role=role, index=query.index)

            def keep(data: bytes) -> None:
                cache.put(key, data)

        chunks = await pod_log(
            rest,
            namespace,
            pod,
            follow=query.follow and pod == task.pod and not previous and not task.state.terminal,
            tail=query.tail,
            previous=previous,
            limit=query.limit,
            secrets=secrets,
            keep=keep,
        )
    except ApiError as error:
        if error.status == 400 and previous:
            raise NotFound(
                f"Kubernetes no longer keeps attempt {query.attempt} of task {role}-{query.index}"
            ) from None
        if error.status == 400:  # the container has not started: no log yet
            return LogStream(size=0, chunks=_once(b""), role=role, index=query.index)
        raise typed(error) from None
    return LogStream(size=0, chunks=chunks, role=role, index=query.index)


def attempt_pod(task: Task, attempt: int | None, job_id: str) -> tuple[str, bool]:
    """The pod, and whether its previous container, that ran `attempt` of a task.
    Attempts are the failed pods it replaced (a Job's retries), oldest first, then the
    instances of its current pod's container (restarts), of which the kubelet keeps
    the last terminated one."""
    assert task.pod is not None
    if attempt is None or attempt == task.retries:
        return task.pod, False
    where = f"task {task.role}-{task.index} of job {job_id}"
    if attempt < 0 or attempt > task.retries:
        raise NotFound(f"{where} has no attempt {attempt} (attempts 0 to {task.retries})")
    attempt -= len(task.archived_logs)  # kept logs of evicted pods come first
    if attempt < len(task.earlier_pods):
        return task.earlier_pods[attempt], False
    if attempt == task.retries - 1:
        return task.pod, True
    raise NotFound(f"Kubernetes no longer keeps attempt {attempt} of {where}")


def stored_log(data: bytes, query: LogQuery, role: str) -> LogStream:
    """A kept log answered as ``query`` asks: its last ``tail`` lines, or a byte range."""
    if query.offset is not None and query.offset < 0:
        raise BadRequest("offset must be ≥ 0")
    size = len(data)
    if query.tail is not None:
        lines = data.splitlines(keepends=True)
        data = b"".join(lines[-query.tail :]) if query.tail > 0 else b""
        size = 0
    elif query.offset is not None or query.limit is not None:
        start = query.offset or 0
        data = data[start : None if query.limit is None else start + query.limit]
    else:
        size = 0
    return LogStream(size=size, chunks=_once(data), role=role, index=query.index)


async def secret_values(rest: Rest, namespace: str, job: JobProtocol, names: JobNames) -> list[str]:
    """The values to blank in logs: the stored spec hides them, the Secret holds them
    (with the job's ssh key pair)."""
    if not job.secrets and not needs_job_key(job):
        return []
    try:
        secret = await rest.get(path(SECRET, namespace, names.secret))
    except ApiError:
        return []
    values = {
        base64.b64decode(v).decode(errors="replace") for v in (secret.get("data") or {}).values()
    }
    return sorted((v for v in values if len(v) >= MIN_SEARCHED_SECRET), key=len, reverse=True)


async def _once(data: bytes) -> AsyncIterator[bytes]:
    if data:
        yield data


async def pod_log(
    rest: Rest,
    namespace: str,
    pod: str,
    *,
    follow: bool = False,
    tail: int | None = None,
    previous: bool = False,
    limit: int | None = None,
    secrets: list[str] | None = None,
    container: str = "main",
    keep: Callable[[bytes], None] | None = None,
) -> AsyncGenerator[bytes, None]:
    """The pod's log as it comes (close it to let the connection go before its end);
    ``keep`` gets the whole of it (raw) once read to its end, unless it is larger than
    ``ENTRY_MAX_BYTES``."""
    resp = await rest.open(
        "GET",
        f"/api/v1/namespaces/{quote(namespace)}/pods/{quote(pod)}/log",
        query={
            "container": container,
            "follow": "true" if follow else None,
            "tailLines": tail,
            "previous": "true" if previous else None,
            "limitBytes": limit,
        },
        timeout=aiohttp.ClientTimeout(
            total=None, sock_connect=10, sock_read=None if follow else 60
        ),
    )
    return _chunks(resp, secrets or [], keep)


async def ranged_pod_log(
    rest: Rest,
    namespace: str,
    pod: str,
    *,
    offset: int,
    limit: int | None,
    previous: bool = False,
    secrets: list[str] | None = None,
    container: str = "main",
) -> tuple[int, bytes]:
    """The log's size in bytes and its bytes ``[offset, offset + limit)``.

    pods/log has no byte offsets, so the log is read once and only the range is kept: memory
    stays bounded by ``limit`` (the kubelet rotates container logs at a few MB anyway)."""
    resp = await rest.open(
        "GET",
        f"/api/v1/namespaces/{quote(namespace)}/pods/{quote(pod)}/log",
        query={"container": container, "previous": "true" if previous else None},
        timeout=aiohttp.ClientTimeout(total=None, sock_connect=10, sock_read=60),
    )
    end = None if limit is None else offset + limit
    size, kept = 0, bytearray()
    try:
        async for data in resp.content.iter_any():
            start_of_chunk = size
            size += len(data)
            lo, hi = max(offset, start_of_chunk), size if end is None else min(end, size)
            if hi > lo:
                kept += data[lo - start_of_chunk : hi - start_of_chunk]
    finally:
        resp.release()
    return size, redact_bytes(bytes(kept), secrets or [])


async def _chunks(
    resp: aiohttp.ClientResponse,
    secrets: list[str],
    keep: Callable[[bytes], None] | None = None,
) -> AsyncGenerator[bytes, None]:
    pending = b""
    kept: bytearray | None = bytearray() if keep is not None else None
    try:
        async for data in resp.content.iter_any():
            if kept is not None:
                kept += data
                if len(kept) > ENTRY_MAX_BYTES:
                    kept = None
            if not secrets:
                yield data
                continue
            data = pending + data
            cut = data.rfind(b"\n") + 1
            data, pending = data[:cut], data[cut:]
            if data:
                yield redact_bytes(data, secrets)
        if pending:
            yield redact_bytes(pending, secrets)
        if keep is not None and kept is not None:  # read to its end, not left midway
            keep(bytes(kept))
    finally:
        resp.release()
