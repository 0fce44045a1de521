"""``GET virtual-clusters``: capacity, use and queue of each virtual cluster."""

from __future__ import annotations

from tornado import web

from ...backends.models import VirtualClusterList
from .base import PAIHandler, authorized


class VirtualClustersHandler(PAIHandler):
    @web.authenticated
    @authorized("read")
    async def get(self) -> None:
        backend = await self.backend()
        self.send_json(VirtualClusterList(items=await backend.virtual_clusters()))
