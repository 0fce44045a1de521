"""``GET nodes``: the hardware view — each node's GPUs (total, used by jobs, free), CPU
and memory requested against allocatable, and the jobs on it."""

from __future__ import annotations

from tornado import web

from ...backends.models import NodeList
from .base import PAIHandler, authorized


class NodesHandler(PAIHandler):
    @web.authenticated
    @authorized("read")
    async def get(self) -> None:
        backend = await self.backend()
        self.send_json(NodeList(items=await backend.nodes()))
