"""The base of every jupyter-pai handler: authenticated JSON, and typed core errors turned
into ``{"message", "errors"}`` with their own status — never a bare 500 page."""

from __future__ import annotations

import asyncio
import functools
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar, cast

from jupyter_server.auth.decorator import authorized as jupyter_authorized
from jupyter_server.base.handlers import APIHandler
from jupyter_server.log import log_request
from jupyter_server.prometheus.log_functions import prometheus_log_method
from pydantic import BaseModel
from tornado import web

from ...backends.base import Backend
from ...errors import BadRequest, FieldError, PAIError, TooLarge
from ...spec.parse import ParsedJob
from ..context import PAIContext
from ..parsing import in_worker, job_from_body

YAML_TYPES = ("text/yaml", "application/yaml", "application/x-yaml", "text/x-yaml", "text/plain")
#: No request to this API needs a bigger body: a job spec is stored whole as an annotation on
#: Kubernetes (256 KiB for all of an object's), and nothing else is uploaded through it.
#: (The server's own ``ServerApp.max_body_size`` bounds what is read at all.)
MAX_BODY_BYTES = 1024 * 1024
Method = TypeVar("Method", bound=Callable[..., Any])


def authorized(action: str) -> Callable[[Method], Method]:
    """jupyter_server's ``@authorized`` on the handler's ``auth_resource``, with the action
    (``read``, ``write``, ``execute``) always written out, and typed."""
    return cast(Callable[[Method], Method], jupyter_authorized(action))


class PAIHandler(APIHandler):
    #: What an Authorizer is asked about (``@authorized``): reads, writes, and ``execute``
    #: for a task's web port.
    auth_resource = "pai"
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

    def _log(self) -> None:
        """The access log. jupyter_server's formats a line for every request, which its
        logger then drops where successes are not logged (they are debug lines): a panel's
        polls cost that on every answer. Here the line is made only if it is logged; the
        request's metrics are recorded either way. A server with its own log function
        keeps it."""
        status, given = self.get_status(), self.settings.get("log_function")
        if (
            (status < 300 or status == 304)
            and isinstance(given, functools.partial)
            and given.func is log_request
            and not self.log.isEnabledFor(logging.DEBUG)
        ):
            if given.keywords.get("record_prometheus_metrics", True):
                prometheus_log_method(self)  # type: ignore[no-untyped-call]
            return
        super()._log()

    async def backend(self) -> Backend:
        return await self.pai.backend()

    async def parsed_job(self, virtual_cluster: str | None = None) -> ParsedJob:
        """The request body as a validated job: YAML text (``text/yaml``, or no type) or a
        JSON object, parsed in the parser's process; ``parse_job`` says what is wrong."""
        content_type = (
            (self.request.headers.get("Content-Type") or "").split(";")[0].strip().lower()
        )
        if content_type != "application/json" and content_type not in (*YAML_TYPES, ""):
            raise BadRequest(
                f"unsupported Content-Type {content_type!r}: send the job as text/yaml or "
                "application/json"
            )
        as_json = content_type == "application/json"
        return await in_worker(job_from_body, self.request.body, as_json, virtual_cluster)

    def send_json(self, value: BaseModel | dict[str, Any], status: int = 200) -> None:
        """Every JSON answer goes out here: a named model (lists in their envelope), or a
        plain object only for documents that are not ours (the JSON Schema)."""
        # pydantic writes the JSON itself: a third of the CPU of a job's detail otherwise.
        body = (
            value.model_dump_json(by_alias=True)
            if isinstance(value, BaseModel)
            else json.dumps(value)
        )
        self.set_status(status)
        self.set_header("Content-Type", "application/json; charset=UTF-8")
        self.finish(body)

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


class ReadHandler(PAIHandler):
    """A ``GET`` that answers with one read of the backend, as JSON: ``read(backend,
    **path_arguments)``."""

    read: Callable[..., Awaitable[BaseModel]]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # Each subclass is a route that answers GET: say so in its own class, where the
        # route table's readers (the OpenAPI check) look for the verbs a route serves.
        cls.get = ReadHandler.get  # type: ignore[method-assign]

    @web.authenticated
    @authorized("read")
    async def get(self, *args: str, **kwargs: str) -> None:
        self.send_json(await self.read(await self.backend(), *args, **kwargs))


class StreamingHandler(PAIHandler):
    """A handler whose answer streams until the client goes: ``_gone`` is set when the
    connection closes, so the stream stops at once instead of at its next write."""

    def initialize(self) -> None:
        self._gone = asyncio.Event()

    def on_connection_close(self) -> None:
        self._gone.set()
        super().on_connection_close()
