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
    return size, _redact(bytes(kept), secrets or []) if secrets else bytes(kept)


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
