"""Request bodies are parsed in a worker process, never on the server's event loop nor in
one of its threads: parsing is Python work, and a thread would hold the GIL that the event
loop needs after every read and write, so a large document would still stall every other
request (by the GIL's 5 ms switch interval, per read and write).

One worker: documents queue behind each other, never beside the server. A worker that dies
(killed for its memory, say) is replaced, and the request it was parsing is tried once more.
"""

from __future__ import annotations

import asyncio
import multiprocessing
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import ValidationError

from ..backends.models import NotebookJobRequest
from ..errors import FieldError, PAIError, SpecError, Unavailable
from ..spec.document import parse_json
from ..spec.parse import ParsedJob, parse_job

T = TypeVar("T")


# What the worker runs. Here, not beside the handlers: the worker imports this module and the
# parser, not the server.


def job_from_body(body: bytes, as_json: bool, virtual_cluster: str | None) -> ParsedJob:
    """A request's body (YAML, or JSON if ``as_json``) as a validated job."""
    source: Any = body
    if as_json:
        value = parse_json(body)
        # Not an object: parse_job says what is wrong with it, in the words it uses for YAML.
        source = value if isinstance(value, dict) else body
    return parse_job(source, virtual_cluster=virtual_cluster)


def notebook_job_request(body: bytes) -> NotebookJobRequest:
    try:
        return NotebookJobRequest.model_validate(parse_json(body))
    except ValidationError as exc:
        errors = [FieldError(".".join(str(p) for p in e["loc"]), e["msg"]) for e in exc.errors()]
        raise SpecError(errors, "invalid notebook job: " + str(errors[0])) from None


@dataclass
class _Refused:
    """A :class:`PAIError` crossing from the worker: its subclasses' constructors differ, so
    they do not pickle by themselves."""

    kind: type[PAIError]
    message: str
    errors: list[FieldError]

    def error(self) -> PAIError:
        error = self.kind.__new__(self.kind)
        PAIError.__init__(error, self.message, self.errors)
        return error


def _run(call: Callable[..., Any], args: tuple[Any, ...]) -> Any:
    try:
        return call(*args)
    except PAIError as exc:
        return _Refused(type(exc), exc.message, exc.errors)


class _Worker:
    def __init__(self) -> None:
        self._pool: ProcessPoolExecutor | None = None

    async def run(self, call: Callable[..., Any], args: tuple[Any, ...]) -> Any:
        if self._pool is None:
            # spawn: forking a server that runs threads could copy a lock someone holds.
            context = multiprocessing.get_context("spawn")
            self._pool = ProcessPoolExecutor(1, mp_context=context)
        pool = self._pool
        try:
            return await asyncio.get_running_loop().run_in_executor(pool, _run, call, args)
        except BrokenProcessPool:
            if self._pool is pool:
                self._pool = None
                pool.shutdown(wait=False)
            raise


_WORKER = _Worker()


async def in_worker(call: Callable[..., T], *args: Any) -> T:
    """``call(*args)`` in the parser's process; ``call`` and its arguments must pickle."""
    try:
        outcome = await _WORKER.run(call, args)
    except BrokenProcessPool:
        try:
            outcome = await _WORKER.run(call, args)  # once more, on a new worker
        except BrokenProcessPool:
            raise Unavailable(
                "the job parser stopped twice while reading this request; try again"
            ) from None
    if isinstance(outcome, _Refused):
        raise outcome.error()
    result: T = outcome
    return result
