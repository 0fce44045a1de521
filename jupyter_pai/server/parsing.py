"""Request bodies are parsed in a worker process, never on the server's event loop nor in
one of its threads: parsing is Python work, and a thread would hold the GIL that the event
loop needs after every read and write, so a large document would still stall every other
request (by the GIL's 5 ms switch interval, per read and write).

One worker: documents queue behind each other, never beside the server. A worker that dies
(killed for its memory, say) is replaced, and the request it was parsing is tried once more.
The worker is a program of this package's own (:mod:`..backends.pythonchild`), not a
``multiprocessing`` child: those start with the server's working folder first on
``sys.path``, and so does ``multiprocessing``'s resource tracker.
"""

from __future__ import annotations

import asyncio
import pickle
import subprocess
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import IO, Any, TypeVar

from pydantic import ValidationError

from ..backends.models import NotebookJobRequest
from ..backends.pythonchild import python_command
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


#: The worker's program. Each call and each outcome is pickled, after its length.
_SERVE = "from jupyter_pai.server.parsing import serve\nserve()\n"
_LENGTH_BYTES = 8


class _WorkerDied(Exception):
    """The worker ended before it answered."""


def _read_frame(stream: IO[bytes]) -> bytes | None:
    head = stream.read(_LENGTH_BYTES)
    if len(head) < _LENGTH_BYTES:
        return None
    size = int.from_bytes(head, "big")
    data = stream.read(size)
    return data if len(data) == size else None


def _write_frame(stream: IO[bytes], data: bytes) -> None:
    stream.write(len(data).to_bytes(_LENGTH_BYTES, "big") + data)
    stream.flush()


def serve() -> None:
    """The worker's loop (its own process): calls on stdin until it closes, each answered
    on stdout with ``(True, result)`` or ``(False, exception)``."""
    calls, answers = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # a print in a parser must not break the answers
    while (frame := _read_frame(calls)) is not None:
        call, args = pickle.loads(frame)
        try:
            outcome: tuple[bool, Any] = (True, _run(call, args))
        except Exception as error:
            outcome = (False, error)
        try:
            data = pickle.dumps(outcome)
        except Exception as error:  # an answer that does not pickle: say which
            data = pickle.dumps((False, RuntimeError(f"unpicklable answer: {error!r}")))
        _write_frame(answers, data)


class _Worker:
    """The worker process, written to and read from on a thread of its own: the event
    loop never waits on its pipes, and calls queue on that thread."""

    def __init__(self) -> None:
        self._proc: subprocess.Popen[bytes] | None = None
        self._thread = ThreadPoolExecutor(1, thread_name_prefix="jupyter-pai-parser")

    async def run(self, call: Callable[..., Any], args: tuple[Any, ...]) -> Any:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._thread, self._call, call, args)

    def _call(self, call: Callable[..., Any], args: tuple[Any, ...]) -> Any:
        proc = self._proc
        if proc is None or proc.poll() is not None:
            proc = self._proc = subprocess.Popen(
                python_command(_SERVE),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                close_fds=True,
            )
        assert proc.stdin is not None and proc.stdout is not None
        try:
            _write_frame(proc.stdin, pickle.dumps((call, args)))
            answer = _read_frame(proc.stdout)
        except OSError:  # it had ended: the pipe is broken
            answer = None
        if answer is None:
            self._discard()
            raise _WorkerDied
        ok, value = pickle.loads(answer)
        if not ok:
            raise value
        return value

    def _discard(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        proc.kill()
        proc.wait()
        for pipe in (proc.stdin, proc.stdout):
            if pipe is not None:
                pipe.close()

    def close(self) -> None:
        """End the worker (a later call starts another)."""
        self._thread.submit(self._discard).result()


_WORKER = _Worker()


async def in_worker(call: Callable[..., T], *args: Any) -> T:
    """``call(*args)`` in the parser's process; ``call`` and its arguments must pickle."""
    try:
        outcome = await _WORKER.run(call, args)
    except _WorkerDied:
        try:
            outcome = await _WORKER.run(call, args)  # once more, on a new worker
        except _WorkerDied:
            raise Unavailable(
                "the job parser stopped twice while reading this request; try again"
            ) from None
    if isinstance(outcome, _Refused):
        raise outcome.error()
    result: T = outcome
    return result
