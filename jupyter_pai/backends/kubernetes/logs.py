"""Task logs streamed from the API server (``pods/log``) chunk by chunk, never buffered
whole; secrets' values are blanked line by line on the way through."""

from __future__ import annotations

from collections.abc import AsyncIterator
from urllib.parse import quote

import aiohttp

from ...spec.render import redact
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
    secrets: list[str] | None = None,
    container: str = "main",
) -> AsyncIterator[bytes]:
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
    return _chunks(resp, secrets or [])


async def _chunks(resp: aiohttp.ClientResponse, secrets: list[str]) -> AsyncIterator[bytes]:
    pending = b""
    try:
        async for data in resp.content.iter_any():
            if not secrets:
                yield data
                continue
            data = pending + data
            cut = data.rfind(b"\n") + 1
            data, pending = data[:cut], data[cut:]
            if data:
                yield _redact(data, secrets)
        if pending:
            yield _redact(pending, secrets)
    finally:
        resp.release()


def _redact(data: bytes, secrets: list[str]) -> bytes:
    text = data.decode("utf-8", errors="surrogateescape")
    return redact(text, secrets).encode("utf-8", errors="surrogateescape")
