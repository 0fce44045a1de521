"""Log follows opened and read in a process of their own: the log relay.

Under load the Jupyter server's interpreter is busy with the requests it serves, and a
follow opened there (or on a thread of it) waits for the interpreter lock at every step of
its TLS handshake and every chunk: its first bytes came in 0.5 to 0.7 s where the API server
answers in 0.2 s. The relay is a second Python process, started with the first follow and
shared by all of them, that opens the stream with the server's own credentials (the same
kubeconfig or service account), reads it and blanks secrets in it (:mod:`.podlog`), and
writes the plain bytes to a socket the server only copies from.

Each follow is one request on the relay's control socket (a Unix socket pair) carrying the
server's end of a new socket pair and, where the follower's connection is plain HTTP/1.1,
that connection with the response's head. The relay answers on the pair with one header
line, the API server's status; then it writes the log's bytes to the follower's connection
(having sent the header first, so the server never writes there once the relay might), or
back on the pair, until either side closes. On a refusal it writes nothing to the
follower's connection, and the server answers the error. The secrets to blank reach it on
the control socket, never in an argument or an environment variable. The relay ends when
the server's end of the control socket closes (the server stopped or was killed).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import sys
from collections.abc import AsyncGenerator
from typing import Any

from ...errors import Unavailable
from ..logredaction import LogSecrets
from ..pythonchild import python_command
from .rest import ApiError, Rest

#: The largest control request (a follow's pod, options and secrets' values).
REQUEST_MAX_BYTES = 1 << 20
#: The largest header line the relay answers a follow with.
HEADER_MAX_BYTES = 64 * 1024
#: How long the server waits for the relay's header (the API server's own answer included).
HEADER_WAIT_SECONDS = 60.0
#: How long follows stay in the server after the relay ended without answering.
BROKEN_SECONDS = 60.0
#: Bytes read from the relay at a time.
READ_BYTES = 64 * 1024


class RelayUnavailable(Exception):
    """The relay could not be started or reached: the follow is opened in the server."""


class LogRelay:
    """The server's side: starts the relay on the first follow (again if it ended) and
    hands each follow to it."""

    #: How the relay is started (its control socket's descriptor is added).
    command: tuple[str, ...] = tuple(
        python_command(f"from {__name__} import main\nsys.exit(main(sys.argv[1:]))\n")
    )

    def __init__(self, kubeconfig: str | None, context: str | None, timeout: float) -> None:
        self._settings = {"kubeconfig": kubeconfig, "context": context, "timeout": timeout}
        self._control: socket.socket | None = None
        self._process: asyncio.subprocess.Process | None = None
        self._starting = asyncio.Lock()
        # After a relay that ended without answering, follows stay in the server a while.
        self._broken_until = 0.0

    @property
    def pid(self) -> int | None:
        """The relay's process id, while it runs."""
        process = self._process
        return process.pid if process is not None and process.returncode is None else None

    async def _started(self) -> socket.socket:
        async with self._starting:
            if self._control is not None and self.pid is not None:
                return self._control
            await self._stop()
            if asyncio.get_running_loop().time() < self._broken_until:
                raise RelayUnavailable("the log relay ended without answering a moment ago")
            ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            try:
                self._process = await asyncio.create_subprocess_exec(
                    *self.command,
                    str(theirs.fileno()),
                    pass_fds=(theirs.fileno(),),
                    stdin=asyncio.subprocess.DEVNULL,
                    stdout=asyncio.subprocess.DEVNULL,
                )
            except OSError as error:
                ours.close()
                raise RelayUnavailable(f"the log relay did not start: {error}") from None
            finally:
                theirs.close()
            ours.setblocking(False)
            ours.send(json.dumps(self._settings).encode())
            self._control = ours
            return ours

    async def open(
        self,
        namespace: str,
        pod: str,
        secrets: LogSecrets,
        client: tuple[socket.socket, bytes] | None = None,
        **options: Any,
    ) -> RelayedLog | None:
        """:func:`.podlog.pod_log`'s follow, opened and read by the relay: the chunks as
        they come (closing the generator ends the stream), or None where the relay took
        ``client`` (the follower's connection, nothing written on it yet, and the head to
        write first) and writes the follow there. Raises the API server's refusal as
        :class:`ApiError`, :class:`RelayUnavailable` where the relay cannot take it; then
        nothing was written to ``client``."""
        request = {
            "namespace": namespace,
            "pod": pod,
            "options": options,
            "secrets": [v.decode("utf-8", errors="surrogateescape") for v in secrets.values],
            "head": client[1].decode("latin-1") if client is not None else None,
        }
        ours, theirs = socket.socketpair()
        fds = [theirs.fileno()] + ([client[0].fileno()] if client is not None else [])
        try:
            for attempt in range(2):  # a relay that ended unseen is started again once
                control = await self._started()
                try:
                    socket.send_fds(control, [json.dumps(request).encode()], fds)
                    break
                except OSError as error:  # it ended, or is too far behind to take more
                    await self._stop()
                    if attempt:
                        self._broken_until = asyncio.get_running_loop().time() + BROKEN_SECONDS
                        ours.close()
                        raise RelayUnavailable(f"the log relay took no request: {error}") from None
        finally:
            theirs.close()
        # Read with the socket's own calls, not a stream: under load each step of setting
        # one up is another turn of the server's busy loop before the follow's first bytes.
        ours.setblocking(False)
        try:
            async with asyncio.timeout(HEADER_WAIT_SECONDS):
                line = await _line(ours)
            if not line:  # it ended (or never started: a broken installation)
                self._broken_until = asyncio.get_running_loop().time() + BROKEN_SECONDS
                await self._stop()
                raise ValueError("it ended")
            header = json.loads(line)
            if not isinstance(header, dict):
                raise ValueError("not an object")
        except (TimeoutError, ValueError, OSError) as error:
            ours.close()
            raise RelayUnavailable(f"the log relay did not answer: {error!r}") from None
        except BaseException:
            ours.close()
            raise
        if header.get("status") != 200:
            ours.close()
            if "unavailable" in header:
                raise Unavailable(str(header["unavailable"]))
            raise ApiError(
                int(header.get("status") or 502),
                str(header.get("reason") or ""),
                str(header.get("message") or "the log relay failed"),
            )
        if header.get("taken"):
            ours.close()
            return None
        return RelayedLog(ours)

    async def _stop(self) -> None:
        control, process = self._control, self._process
        self._control = self._process = None
        if control is not None:
            control.close()  # the relay ends when it sees this end close
        if process is not None and process.returncode is None:
            try:
                async with asyncio.timeout(5):
                    await process.wait()
            except TimeoutError:
                process.kill()
                await process.wait()

    async def close(self) -> None:
        async with self._starting:
            await self._stop()


async def _line(sock: socket.socket) -> bytes:
    """The relay's header line (it sends nothing after it until told what to do)."""
    loop = asyncio.get_running_loop()
    data = b""
    while not data.endswith(b"\n"):
        got = await loop.sock_recv(sock, HEADER_MAX_BYTES)
        if not got:
            break
        data += got
        if len(data) > HEADER_MAX_BYTES:
            raise ValueError("the relay's header is too long")
    return data


class RelayedLog:
    """A follow the relay has opened and sends back to the server, read once."""

    def __init__(self, pair: socket.socket) -> None:
        self._pair = pair

    def __aiter__(self) -> RelayedLog:
        return self

    async def __anext__(self) -> bytes:
        try:
            data = await asyncio.get_running_loop().sock_recv(self._pair, READ_BYTES)
        except OSError:
            data = b""  # the relay ended: so does the follow
        if not data:
            await self.aclose()
            raise StopAsyncIteration
        return data

    async def aclose(self) -> None:
        self._pair.close()


# -- the relay's process -------------------------------------------------------------------


async def _follow(
    rest: Rest, request: dict[str, Any], pair: socket.socket, client: socket.socket | None
) -> None:
    """One follow: the header to the server (on ``pair``), then the log's bytes to the
    follower's ``client`` connection where the server handed it over, else back on ``pair``,
    until the log ends or the reader goes."""
    from .podlog import pod_log

    loop = asyncio.get_running_loop()
    chunks: AsyncGenerator[bytes, None] | None = None
    closing: list[socket.socket | asyncio.StreamWriter] = [pair]
    if client is not None:
        closing.append(client)
    answered = False

    async def header(**fields: Any) -> None:
        nonlocal answered
        answered = True
        await loop.sock_sendall(pair, json.dumps(fields).encode() + b"\n")

    try:
        try:
            chunks = await pod_log(
                rest,
                str(request["namespace"]),
                str(request["pod"]),
                follow=True,
                secrets=LogSecrets.of(request.get("secrets") or []),
                **request.get("options") or {},
            )
        except ApiError as error:
            await header(status=error.status, reason=error.reason, message=error.message)
            return
        except Unavailable as error:
            await header(unavailable=error.message)
            return
        # The header goes first: once the server reads "taken", it writes nothing more to
        # the follower, and until then the relay has written nothing there.
        await header(status=200, taken=client is not None)
        if client is None:
            reader, writer = await asyncio.open_unix_connection(sock=pair)
        else:
            reader, writer = await asyncio.open_connection(sock=client)
            writer.write(str(request.get("head") or "").encode("latin-1"))
        closing.append(writer)
        await _copy(chunks, reader, writer, chunked=client is not None)
    except (OSError, EOFError, asyncio.CancelledError):
        pass  # either side went away
    except Exception as error:  # the follow ends; the relay serves the others
        # Its type only: a message could quote the log, and the log may hold a secret.
        print(f"jupyter-pai log relay: a follow failed: {type(error).__name__}", file=sys.stderr)
        if not answered:
            with contextlib.suppress(OSError):
                await header(unavailable=f"the log relay failed: {type(error).__name__}")
    finally:
        if chunks is not None:
            with contextlib.suppress(Exception):
                await chunks.aclose()
        for each in closing:
            each.close()


async def _copy(
    chunks: AsyncGenerator[bytes, None],
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    *,
    chunked: bool,
) -> None:
    """The log's chunks to ``writer`` (framed as HTTP's chunked encoding, ended so, where
    ``chunked``) until the log ends or the other side closes: a quiet log too."""

    async def copy() -> None:
        async for data in chunks:
            writer.write(b"%x\r\n%s\r\n" % (len(data), data) if chunked else data)
            await writer.drain()
        if chunked:
            writer.write(b"0\r\n\r\n")
            await writer.drain()

    async def closed() -> None:
        while await reader.read(READ_BYTES):
            pass  # a client sends nothing more once it asked; its end is what matters

    copying, watching = asyncio.ensure_future(copy()), asyncio.ensure_future(closed())
    try:
        await asyncio.wait((copying, watching), return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (copying, watching):
            task.cancel()
        await asyncio.gather(copying, watching, return_exceptions=True)


async def _serve(control: socket.socket) -> None:
    from . import connect

    loop = asyncio.get_running_loop()
    settings = json.loads(await loop.sock_recv(control, REQUEST_MAX_BYTES) or b"{}")
    api = await connect.api_client(settings.get("kubeconfig"), settings.get("context"))
    rest = Rest(api, timeout=float(settings.get("timeout") or 15.0))
    ended = loop.create_future()
    follows: set[asyncio.Task[None]] = set()

    def take() -> None:
        while True:
            try:
                data, fds, _, _ = socket.recv_fds(control, REQUEST_MAX_BYTES, 2)
            except BlockingIOError:
                return
            except OSError:
                data, fds = b"", []
            if not data:  # the server's end closed
                for fd in fds:
                    os.close(fd)
                if not ended.done():
                    ended.set_result(None)
                return
            # The follow's pair, and the follower's connection where the server hands it.
            socks = [socket.socket(fileno=fd) for fd in fds]
            for sock in socks:
                sock.setblocking(False)
            try:
                request = json.loads(data)
            except ValueError:
                request = None
            if not socks or not isinstance(request, dict):
                for sock in socks:
                    sock.close()
                continue
            client = socks[1] if len(socks) > 1 else None
            task = asyncio.ensure_future(_follow(rest, request, socks[0], client))
            follows.add(task)
            task.add_done_callback(follows.discard)

    loop.add_reader(control.fileno(), take)
    try:
        await ended
    finally:
        loop.remove_reader(control.fileno())
        for task in list(follows):
            task.cancel()
        await asyncio.gather(*follows, return_exceptions=True)
        await api.close()


def main(argv: list[str]) -> int:
    control = socket.socket(fileno=int(argv[0]))
    control.setblocking(False)
    asyncio.run(_serve(control))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
