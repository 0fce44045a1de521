"""Instant queries to a Prometheus server's HTTP API (``/api/v1/query``), shared by the
GPU readings per pod and the utilisation per node."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Generic, TypeVar

import aiohttp

Sample = tuple[dict[str, str], float]
T = TypeVar("T")


class Cached(Generic[T]):
    """What ``refresh`` answered, reused for ``ttl`` seconds; concurrent callers share one
    refresh, so a poll by many viewers costs Prometheus one set of queries."""

    def __init__(self, refresh: Callable[[], Awaitable[T]], ttl: float):
        self._refresh = refresh
        self.ttl = ttl
        self._value: tuple[float, T] | None = None
        self._lock = asyncio.Lock()

    async def get(self) -> T:
        async with self._lock:
            if self._value is None or time.monotonic() - self._value[0] >= self.ttl:
                value = await self._refresh()
                self._value = (time.monotonic(), value)
            return self._value[1]

    def forget(self) -> None:
        """The next ``get`` refreshes (the benchmark measures refreshes)."""
        self._value = None


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


class NoAnswer(Exception):
    """Prometheus could not be asked; the message is the note to show instead of figures."""


async def instant_all(
    url: str, queries: Mapping[str, str], timeout: float
) -> dict[str, list[Sample]]:
    """Each named query's samples, the queries sent at once over one session. Raises
    :class:`NoAnswer` when Prometheus cannot be reached or refuses one."""
    try:
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=timeout)) as session:
            answers = await asyncio.gather(*(instant(session, url, q) for q in queries.values()))
    except (aiohttp.ClientError, asyncio.TimeoutError, ValueError) as error:
        reason = str(error) or type(error).__name__
        raise NoAnswer(f"Prometheus at {url} did not answer: {reason}") from None
    return dict(zip(queries, answers, strict=True))
