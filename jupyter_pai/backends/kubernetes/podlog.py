"""A pod's log read from the API server (``pods/log``) as it comes, chunk by chunk, with
secrets' values blanked on the way (:mod:`..logredaction`). Used by the server and by the
log relay's process (:mod:`.logrelay`), so it imports nothing of the API's models."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable
from urllib.parse import quote

import aiohttp

from ..logredaction import LogRedactor, LogSecrets
from .logcache import ENTRY_MAX_BYTES
from .rest import Rest


async def pod_log(
    rest: Rest,
    namespace: str,
    pod: str,
    *,
    follow: bool = False,
    tail: int | None = None,
    previous: bool = False,
    limit: int | None = None,
    secrets: LogSecrets | None = None,
    container: str = "main",
    keep: Callable[[bytes], None] | None = None,
    context_lines: int = 0,
) -> AsyncGenerator[bytes, None]:
    """The pod's log as it comes (close it to let the connection go before its end);
    ``keep`` gets the whole of it (raw) once read to its end, unless it is larger than
    ``ENTRY_MAX_BYTES``; its first ``context_lines`` lines are looked at, not sent."""
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
    return _chunks(resp, secrets or LogSecrets(), keep, context_lines)


async def _chunks(
    resp: aiohttp.ClientResponse,
    secrets: LogSecrets,
    keep: Callable[[bytes], None] | None = None,
    context_lines: int = 0,
) -> AsyncGenerator[bytes, None]:
    kept: bytearray | None = bytearray() if keep is not None else None
    redactor = LogRedactor(secrets) if secrets and not context_lines else None
    before = bytearray()  # the lines looked at, not sent, as they come
    try:
        async for data in resp.content.iter_any():
            if kept is not None:
                kept += data
                if len(kept) > ENTRY_MAX_BYTES:
                    kept = None
            if not secrets:
                yield data
                continue
            if redactor is None:
                before += data
                at = _after_lines(before, context_lines)
                if at is None:
                    continue
                redactor = LogRedactor(secrets, bytes(before[:at]))
                data = bytes(before[at:])
            if out := redactor.feed(data):
                yield out
        if redactor is not None and (rest := redactor.close()):
            yield rest
        if keep is not None and kept is not None:  # read to its end, not left midway
            keep(bytes(kept))
    finally:
        resp.release()


def _after_lines(data: bytearray, lines: int) -> int | None:
    """Where the line after the first ``lines`` lines of ``data`` starts, if it has them."""
    at = 0
    for _ in range(lines):
        found = data.find(b"\n", at)
        if found == -1:
            return None
        at = found + 1
    return at
