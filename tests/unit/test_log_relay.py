"""The log relay's failures leave follows in the server: a relay that ends without
answering (a broken installation, a crash) is not started again for every follow. A follow
handed to it with the follower's connection: written there after the header the server
reads, or, refused by the API server, nothing written there (the server answers)."""

from __future__ import annotations

import asyncio
import json
import socket
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from jupyter_pai.backends.kubernetes import logrelay
from jupyter_pai.backends.kubernetes.logrelay import LogRelay, RelayUnavailable
from jupyter_pai.backends.kubernetes.rest import ApiError
from jupyter_pai.backends.logredaction import LogSecrets
from tests.planted import plant, ran


async def test_a_relay_that_ends_without_answering_is_given_up_for_a_while() -> None:
    relay = LogRelay(None, None, 5.0)
    relay.command = (sys.executable, "-c", "pass")  # ends at once, answering nothing
    started = []
    spawn = logrelay.asyncio.create_subprocess_exec

    async def counted(*args: object, **kwargs: object) -> object:
        started.append(args)
        return await spawn(*args, **kwargs)  # type: ignore[arg-type]

    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(logrelay.asyncio, "create_subprocess_exec", counted)
            with pytest.raises(RelayUnavailable):
                await relay.open("alice", "pod-0", LogSecrets.of(["a-secret-value"]))
            tried = len(started)
            assert 1 <= tried <= 2  # started again once if it had ended before the request
            with pytest.raises(RelayUnavailable, match="a moment ago"):
                await relay.open("alice", "pod-0", LogSecrets())
            assert len(started) == tried  # not started again within the pause
    finally:
        await relay.close()
    assert relay.pid is None


class _Response:
    """A log answer from the API server, as much of one as the relay reads."""

    def __init__(self, chunks: list[bytes]) -> None:
        self.content = self
        self._chunks = chunks

    async def iter_any(self) -> AsyncIterator[bytes]:
        for chunk in self._chunks:
            yield chunk

    def release(self) -> None:
        pass


class _Rest:
    """The relay's API client, answering every log with ``answer`` (or raising it)."""

    def __init__(self, answer: _Response | Exception) -> None:
        self.answer = answer

    async def open(self, *args: object, **kwargs: object) -> _Response:
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


async def _relayed(answer: _Response | Exception, head: bytes) -> tuple[dict[str, Any], bytes]:
    """One follow through the relay's ``_follow`` with the follower's connection handed to
    it: the header the server reads, and all the follower receives."""
    server, relay_pair = socket.socketpair()
    follower, relay_client = socket.socketpair()
    for sock in (server, relay_pair, follower, relay_client):
        sock.setblocking(False)
    request = {"namespace": "alice", "pod": "p", "secrets": [], "head": head.decode("latin-1")}
    loop = asyncio.get_running_loop()
    try:
        await logrelay._follow(_Rest(answer), request, relay_pair, relay_client)  # type: ignore[arg-type]
        header = json.loads(await loop.sock_recv(server, 65536))
        received = b""
        while chunk := await loop.sock_recv(follower, 65536):
            received += chunk
        return header, received
    finally:
        server.close()
        follower.close()


async def test_a_follow_the_api_server_refuses_writes_nothing_to_the_follower() -> None:
    header, received = await _relayed(
        ApiError(400, "BadRequest", "waiting to start"), b"HEAD\r\n\r\n"
    )
    assert header == {"status": 400, "reason": "BadRequest", "message": "waiting to start"}
    # The server answers the refusal on the connection itself: the relay wrote nothing.
    assert received == b""


async def test_a_taken_follow_is_written_to_the_follower_chunked_after_its_head() -> None:
    header, received = await _relayed(_Response([b"line 1\n", b"line 2\n"]), b"HEAD\r\n\r\n")
    assert header == {"status": 200, "taken": True}
    assert received == b"HEAD\r\n\r\n7\r\nline 1\n\r\n7\r\nline 2\n\r\n0\r\n\r\n"


async def test_the_relay_imports_nothing_from_the_servers_working_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The relay is the server's own program: a ``json.py`` (or a ``jupyter_pai``) in the
    folder the server was started in never runs in it, and the follow works."""

    async def log(request: web.Request) -> web.StreamResponse:
        answer = web.StreamResponse()
        await answer.prepare(request)
        await answer.write(f"{request.match_info['pod']} says hello\n".encode())
        return answer

    app = web.Application()
    app.router.add_get("/api/v1/namespaces/{namespace}/pods/{pod}/log", log)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    kubeconfig = tmp_path / "kubeconfig"
    server = f"http://127.0.0.1:{runner.addresses[0][1]}"
    kubeconfig.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": server}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    markers = plant(tmp_path / "work")
    monkeypatch.chdir(tmp_path / "work")
    relay = LogRelay(str(kubeconfig), None, 5.0)
    got: bytes | Exception
    try:
        followed = await relay.open("alice", "pod-0", LogSecrets())
        assert followed is not None
        got = b"".join([chunk async for chunk in followed])
    except RelayUnavailable as error:
        got = error
    finally:
        await relay.close()
        await runner.cleanup()
    assert not ran(markers), ran(markers)
    assert got == b"pod-0 says hello\n"
