"""Instant queries to a Prometheus server's HTTP API (``/api/v1/query``), shared by the
GPU readings per pod and the utilisation per node."""

from __future__ import annotations

from typing import Any

import aiohttp

Sample = tuple[dict[str, str], float]


async def instant(session: aiohttp.ClientSession, url: str, query: str) -> list[Sample]:
    """(labels, value) of each series of an instant query's vector. Raises ``ValueError``
    for an error answer, ``aiohttp.ClientError`` when Prometheus cannot be reached."""
    async with session.get(f"{url}/api/v1/query", params={"query": query}) as resp:
        body: Any = await resp.json(content_type=None)
        if resp.status != 200 or body.get("status") != "success":
            raise ValueError(f"HTTP {resp.status}: {body.get('error', body)}")
    return [
        ({str(k): str(v) for k, v in (item.get("metric") or {}).items()}, float(item["value"][1]))
        for item in body["data"]["result"]
    ]


def unreachable(url: str, error: BaseException) -> str:
    """The note for a Prometheus that did not answer."""
    return f"Prometheus at {url} did not answer: {str(error) or type(error).__name__}"
