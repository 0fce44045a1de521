"""The base of every jupyter-pai handler: authenticated JSON, and typed core errors turned
into ``{"message", "errors"}`` with their own status — never a bare 500 page."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from jupyter_server.base.handlers import APIHandler
from pydantic import BaseModel

from ...backends.base import Backend
from ...errors import BadRequest, FieldError, PAIError, TooLarge
from ...spec.parse import parse_json
from ..context import PAIContext

YAML_TYPES = ("text/yaml", "application/yaml", "application/x-yaml", "text/x-yaml", "text/plain")
#: No request to this API needs a bigger body: a job spec is stored whole as an annotation on
#: Kubernetes (256 KiB for all of an object's), and nothing else is uploaded through it.
#: (The server's own ``ServerApp.max_body_size`` bounds what is read at all.)
MAX_BODY_BYTES = 1024 * 1024


class PAIHandler(APIHandler):
    #: The largest request body the handler accepts (None: what the server reads at all).
    max_body_bytes: int | None = MAX_BODY_BYTES

    @property
    def pai(self) -> PAIContext:
        ctx: PAIContext = self.settings["jupyter_pai"]
        return ctx

    # APIHandler.prepare takes no arguments; mypy compares it with JupyterHandler's.
    async def prepare(self) -> None:  # type: ignore[override]
        await super().prepare()  # authentication first: a stranger learns nothing of limits
        size, most = len(self.request.body or b""), self.max_body_bytes
        if most is not None and size > most:
            raise TooLarge(
                f"the request body is {size} bytes; at most {most} are accepted",
                [FieldError("body", f"at most {most} bytes")],
            )

    async def backend(self) -> Backend:
        return await self.pai.backend()

    def job_source(self) -> Any:
        """The request body as a job document: YAML text (``text/yaml``, or no type) or a
        JSON object; ``parse_job`` says what is wrong with anything else."""
        content_type = (
            (self.request.headers.get("Content-Type") or "").split(";")[0].strip().lower()
        )
        body = self.request.body
        if content_type == "application/json":
            source = parse_json(body)
            # Not an object: parse_job says what is wrong with it, in the words it uses for YAML.
            return source if isinstance(source, dict) else body
        if content_type in YAML_TYPES or not content_type:
            return body
        raise BadRequest(
            f"unsupported Content-Type {content_type!r}: send the job as text/yaml or "
            "application/json"
        )

    def send_json(self, value: BaseModel | dict[str, Any], status: int = 200) -> None:
        """Every JSON answer goes out here: a named model (lists in their envelope), or a
        plain object only for documents that are not ours (the JSON Schema)."""
        body = (
            value.model_dump(mode="json", by_alias=True) if isinstance(value, BaseModel) else value
        )
        self.set_status(status)
        self.set_header("Content-Type", "application/json; charset=UTF-8")
        self.finish(json.dumps(body))

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


class StreamingHandler(PAIHandler):
    """A handler whose answer streams until the client goes: ``_gone`` is set when the
    connection closes, so the stream stops at once instead of at its next write."""

    def initialize(self) -> None:
        self._gone = asyncio.Event()

    def on_connection_close(self) -> None:
        self._gone.set()
        super().on_connection_close()
