"""The base of every jupyter-pai handler: authenticated JSON, and typed core errors turned
into ``{"message", "errors"}`` with their own status — never a bare 500 page."""

from __future__ import annotations

import json
from typing import Any

from jupyter_server.base.handlers import APIHandler
from pydantic import BaseModel

from ...backends.base import Backend
from ...errors import PAIError
from ..context import PAIContext


class PAIHandler(APIHandler):
    @property
    def pai(self) -> PAIContext:
        ctx: PAIContext = self.settings["jupyter_pai"]
        return ctx

    async def backend(self) -> Backend:
        return await self.pai.backend()

    def send_json(self, value: Any, status: int = 200) -> None:
        if isinstance(value, BaseModel):
            value = value.model_dump(mode="json", by_alias=True)
        elif isinstance(value, list):
            value = [
                v.model_dump(mode="json", by_alias=True) if isinstance(v, BaseModel) else v
                for v in value
            ]
        self.set_status(status)
        self.set_header("Content-Type", "application/json; charset=UTF-8")
        self.finish(json.dumps(value))

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        exc = kwargs.get("exc_info", (None, None, None))[1]
        if isinstance(exc, PAIError):
            self.set_status(exc.status)
            body = exc.to_json()
        else:
            reason = self._reason if status_code != 500 else "internal server error"
            message = getattr(exc, "log_message", None) or reason
            body = {"message": message, "errors": []}
        self.set_header("Content-Type", "application/json; charset=UTF-8")
        self.finish(json.dumps(body))

    def log_exception(self, typ: Any, value: Any, tb: Any) -> None:
        if isinstance(value, PAIError):
            # An expected outcome (bad spec, unknown job): one line, no traceback.
            self.log.info(
                "jupyter-pai %s %s: %s", self.request.method, self.request.path, value.message
            )
            return
        super().log_exception(typ, value, tb)
