"""``GET virtual-clusters``: capacity, use and queue of each virtual cluster."""

from __future__ import annotations

from pydantic import BaseModel

from ...backends.base import Backend
from ...backends.models import VirtualClusterList
from .base import ReadHandler


class VirtualClustersHandler(ReadHandler):
    async def read(self, backend: Backend) -> BaseModel:
        return VirtualClusterList(items=await backend.virtual_clusters())
