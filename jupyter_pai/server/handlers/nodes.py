"""``GET nodes``: the hardware view — each node's GPUs (total, used by jobs, free), CPU
and memory requested against allocatable, and the jobs on it."""

from __future__ import annotations

from pydantic import BaseModel

from ...backends.base import Backend
from ...backends.models import NodeList
from .base import ReadHandler


class NodesHandler(ReadHandler):
    async def read(self, backend: Backend) -> BaseModel:
        return NodeList(items=await backend.nodes())
