"""An API server for the watch cache in unit tests: it lists the objects it holds (label
selectors of ``key=value`` terms), then streams the watch events a test puts."""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import AsyncIterator
from typing import Any

Obj = dict[str, Any]


class ListAndWatch:
    def __init__(self, objects: dict[str, list[Obj]]) -> None:
        """``objects``: by the kind's plural (the last part of its URL)."""
        self.objects = objects
        self.events: asyncio.Queue[Obj] = asyncio.Queue()
        self.lists = 0

    async def get(self, url: str, **query: Any) -> Obj:
        self.lists += 1
        terms = [t.split("=", 1) for t in (query.get("labelSelector") or "").split(",") if t]
        items = [
            copy.deepcopy(o)
            for o in self.objects.get(url.rsplit("/", 1)[-1], [])
            if all((o["metadata"].get("labels") or {}).get(k) == v for k, v in terms)
        ]
        return {"items": items, "metadata": {"resourceVersion": "1"}}

    async def open(self, *args: Any, **kwargs: Any) -> None:
        return None

    async def lines(self, resp: None) -> AsyncIterator[bytes]:
        while True:
            yield json.dumps(await self.events.get()).encode()
