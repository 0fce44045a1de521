"""``GET check``: the permission self-check (``jupyter pai check``) for the cluster view:
each permission the backend lacks, in words, and whether its scheduler answers."""

from __future__ import annotations

from pydantic import BaseModel

from ...backends.base import Backend
from .base import ReadHandler


class CheckHandler(ReadHandler):
    async def read(self, backend: Backend) -> BaseModel:
        # Asked afresh each time (a few dozen cheap reviews): a binding an admin just
        # added shows at the next look, not at the next server start.
        return await backend.self_check()
