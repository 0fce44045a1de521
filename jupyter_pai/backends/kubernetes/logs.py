"""Task logs streamed from the API server (``pods/log``) chunk by chunk, never buffered
whole; secrets' values are blanked on the way through (:mod:`..logredaction`), however a
read cuts the log. A task's earlier attempts are the pods it replaced and its container's
previous instance."""

from __future__ import annotations

import asyncio
import base64
import logging
import socket
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from typing import Any
from urllib.parse import quote

import aiohttp

from ...errors import BadRequest, NotFound
from ...spec.protocol import JobProtocol
from ...spec.render import MIN_SEARCHED_SECRET
from ..base import ClientConnection, LogQuery, LogStream
from ..logredaction import LogSecrets, redact_range, redact_tail
from .jobssh import needs_job_key
from .logcache import EndedLogs
from .logrelay import LogRelay, RelayUnavailable
from .naming import JobNames
from .podlog import pod_log
from .resources import CONFIG_MAP, SECRET
from .rest import ApiError, Rest, path, typed
from .states import JobView, Task

log = logging.getLogger(__name__)


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
    relay: LogRelay | None = None,
    connection: ClientConnection | None = None,
) -> LogStream:
    """The log ``query`` asks for, of one task of a job as ``view`` shows it. ``ended``:
    the cache of ended logs, and what tells a pod's uid where its log is final. ``relay``:
    the log relay that opens and reads follows, if given; a follow's ``connection`` is
    handed to it."""
    role = query.role or next(iter(job.task_roles))
    task = next((t for t in view.tasks if t.role == role and t.index == query.index), None)
    if task is None:
        raise NotFound(f"job {job_id} has no task {role}-{query.index}")
    if query.offset is not None and query.offset < 0:
        raise BadRequest("offset must be ≥ 0")
    if query.attempt is not None and 0 <= query.attempt < len(task.archived_logs):
        try:
            archive = await rest.get(path(CONFIG_MAP, namespace, task.archived_logs[query.attempt]))
        except ApiError as error:
            raise typed(error) from None
        data = base64.b64decode((archive.get("binaryData") or {}).get("log") or "")
        secrets = LogSecrets.of(await secret_values(rest, namespace, job, names))
        return stored_log(data, query, role, secrets)
    if task.pod is None:
        return LogStream(size=0, chunks=_once(b""), role=role, index=query.index)
    pod, previous = attempt_pod(task, query.attempt, job_id)
    secrets = LogSecrets.of(await secret_values(rest, namespace, job, names))
    try:
        if (query.offset is not None or query.limit is not None) and query.tail is None:
            size, data = await ranged_pod_log(
                rest,
                namespace,
                pod,
                offset=query.offset or 0,
                limit=query.limit,
                previous=previous,
                secrets=secrets,
            )
            return LogStream(size=size, chunks=_once(data), role=role, index=query.index)
        follow = query.follow and pod == task.pod and not previous and not task.state.terminal
        keep = None
        # Only the latest pod's tail: the one whose phase tells whether its log is final.
        cacheable = pod == task.pod and query.tail is not None and not previous
        uid = ended[1](pod) if ended is not None and cacheable else None
        if ended is not None and uid is not None and query.tail is not None:
            cache, key, lines = ended[0], (uid, query.tail, query.limit), query.tail
            kept = cache.get(key)
            if kept is not None:
                data = redact_tail(kept, lines, query.limit, secrets)
                return LogStream(size=0, chunks=_once(data), role=role, index=query.index)

            def keep(data: bytes) -> None:
                cache.put(key, data)

        # A secret of several lines can begin before a tail's first line: a tail is read
        # with as many lines more, looked at, not sent (and its limit counted after them).
        tail, context_lines = query.tail, 0
        if query.tail is not None and secrets.newlines:
            if not follow or query.limit is not None:
                raw = await _read_all(
                    await pod_log(
                        rest,
                        namespace,
                        pod,
                        tail=query.tail + secrets.newlines,
                        previous=previous,
                        keep=keep,
                    )
                )
                data = redact_tail(raw, query.tail, query.limit, secrets)
                return LogStream(size=0, chunks=_once(data), role=role, index=query.index)
            tail, context_lines = await _follow_from_tail(
                rest, namespace, pod, query.tail, secrets.newlines
            )
        client = None
        if connection is not None and follow and relay is not None:  # only the relay takes it
            client = (connection.socket, connection.head(role, query.index))
        chunks = await open_log(
            rest,
            relay,
            namespace,
            pod,
            client=client,
            follow=follow,
            tail=tail,
            previous=previous,
            limit=query.limit,
            secrets=secrets,
            keep=keep,
            context_lines=context_lines,
        )
    except ApiError as error:
        if error.status == 400 and previous:
            raise NotFound(
                f"Kubernetes no longer keeps attempt {query.attempt} of task {role}-{query.index}"
            ) from None
        if error.status == 400 and follow:  # followed from its start, once it starts
            later = _once_started(rest, namespace, pod, tail, query.limit, secrets, relay)
            return LogStream(size=0, chunks=later, role=role, index=query.index)
        if error.status == 400:  # the container has not started: no log yet
            return LogStream(size=0, chunks=_once(b""), role=role, index=query.index)
        raise typed(error) from None
    if chunks is None:  # the relay writes it to the client's own connection
        return LogStream(size=0, chunks=_once(b""), role=role, index=query.index, taken=True)
    return LogStream(size=0, chunks=chunks, role=role, index=query.index)


#: How long a follow waits for its container to start, asking every ``START_POLL`` s.
START_WAIT, START_POLL = 300.0, 0.2


async def _once_started(
    rest: Rest,
    namespace: str,
    pod: str,
    tail: int | None,
    limit: int | None,
    secrets: LogSecrets,
    relay: LogRelay | None = None,
) -> AsyncGenerator[bytes, None]:
    """A follow of a container that has not started yet: its log from its first line as
    soon as it starts (a follower of a just-submitted job gets its first bytes then, not an
    empty answer to ask again); ends empty if it does not start within ``START_WAIT``."""
    deadline = asyncio.get_running_loop().time() + START_WAIT
    while True:
        await asyncio.sleep(START_POLL)
        try:
            chunks = await open_log(
                rest, relay, namespace, pod, follow=True, tail=tail, limit=limit, secrets=secrets
            )
        except ApiError as error:
            if error.status == 400 and asyncio.get_running_loop().time() < deadline:
                continue
            return
        assert chunks is not None  # no client's connection was offered to take
        async for data in chunks:
            yield data
        return


async def _follow_from_tail(
    rest: Rest, namespace: str, pod: str, lines: int, more: int
) -> tuple[int | None, int]:
    """How to follow a log from its last ``lines`` lines with the ``more`` lines before
    them looked at: the ``tailLines`` to ask for, and how many lines of the answer are
    only looked at. A log with fewer lines than that is followed whole (its last lines
    are first asked for, to count them), so no line before them goes unseen."""
    probe = await _read_all(await pod_log(rest, namespace, pod, tail=lines + more))
    count = probe.count(b"\n") + (1 if probe and not probe.endswith(b"\n") else 0)
    if count >= lines + more:
        return lines + more, more
    return None, max(0, count - lines)


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


def stored_log(data: bytes, query: LogQuery, role: str, secrets: LogSecrets) -> LogStream:
    """A kept log answered as ``query`` asks: its last ``tail`` lines, or a byte range.
    It was kept redacted; it is redacted again as a live log is, in case it was not."""
    if query.offset is not None and query.offset < 0:
        raise BadRequest("offset must be ≥ 0")
    size = len(data)
    if query.tail is not None:
        data = redact_tail(data, query.tail, query.limit, secrets)
        size = 0
    elif query.offset is not None or query.limit is not None:
        start = query.offset or 0
        end = size if query.limit is None else start + query.limit
        data = redact_range(data, start, end, secrets)
    else:
        data = redact_range(data, 0, size, secrets)
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


async def _read_all(chunks: AsyncGenerator[bytes, None]) -> bytes:
    return b"".join([chunk async for chunk in chunks])


async def open_log(
    rest: Rest,
    relay: LogRelay | None,
    namespace: str,
    pod: str,
    client: tuple[socket.socket, bytes] | None = None,
    **options: Any,
) -> AsyncIterator[bytes] | None:
    """:func:`pod_log`; a follow, where ``relay`` is given, opened and read by the log
    relay's process: under load its first bytes do not wait for the server's interpreter.
    None: the relay took ``client`` (the follower's connection and the response's head)
    and writes the follow to it. Where the relay cannot take it, the follow is opened here."""
    if relay is not None and options.get("follow") and options.get("keep") is None:
        passed = {k: v for k, v in options.items() if k not in ("follow", "keep", "secrets")}
        try:
            return await relay.open(
                namespace, pod, options.get("secrets") or LogSecrets(), client, **passed
            )
        except RelayUnavailable as error:
            log.warning("a log follow is read in the server: %s", error)
    return await pod_log(rest, namespace, pod, **options)


async def ranged_pod_log(
    rest: Rest,
    namespace: str,
    pod: str,
    *,
    offset: int,
    limit: int | None,
    previous: bool = False,
    secrets: LogSecrets | None = None,
    container: str = "main",
) -> tuple[int, bytes]:
    """The log's size in bytes and its bytes ``[offset, offset + limit)``.

    pods/log has no byte offsets, so the log is read once and only the range is kept, with
    what lies just around it where secrets are blanked: memory stays bounded by ``limit``
    (the kubelet rotates container logs at a few MB anyway)."""
    resp = await rest.open(
        "GET",
        f"/api/v1/namespaces/{quote(namespace)}/pods/{quote(pod)}/log",
        query={"container": container, "previous": "true" if previous else None},
        timeout=aiohttp.ClientTimeout(total=None, sock_connect=10, sock_read=60),
    )
    context = secrets.context if secrets else 0
    end = None if limit is None else offset + limit
    first, last = max(0, offset - context), None if end is None else end + context
    size, kept = 0, bytearray()
    try:
        async for data in resp.content.iter_any():
            start_of_chunk = size
            size += len(data)
            lo, hi = max(first, start_of_chunk), size if last is None else min(last, size)
            if hi > lo:
                kept += data[lo - start_of_chunk : hi - start_of_chunk]
    finally:
        resp.release()
    if not secrets:
        return size, bytes(kept)
    stop = size if end is None else min(end, size)
    return size, redact_range(bytes(kept), offset - first, stop - first, secrets)
