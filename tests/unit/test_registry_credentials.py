"""A registry's credentials travel only where they are safe: a ``Link`` to the next page is
read from the registry as configured (never switched to plain http), and a token service
gets them only over https, or in the clear from the very host an admin configured as an
http registry. The registry here answers https and plain http on one port, so a request
that went out in the clear is seen, with what it carried."""

from __future__ import annotations

import json
import socket
import ssl
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from jupyter_pai.images import ImageCatalogue, RegistrySettings
from tests.cluster.pki import make_ca, make_serving_cert

BASIC = "Basic dTpw"  # u:p


@dataclass(frozen=True)
class Seen:
    tls: bool
    host: str
    path: str
    authorization: str | None


#: What the registry answers a GET with: (status, headers, JSON body).
Answer = tuple[int, dict[str, str], Any]


class _EitherServer(ThreadingHTTPServer):
    """HTTP and HTTPS on one port: a connection that starts with a TLS handshake is
    wrapped, any other is read in the clear."""

    daemon_threads = True

    def __init__(self, tls: ssl.SSLContext, answer: Callable[[Seen], Answer]) -> None:
        self.tls, self.answer = tls, answer
        self.seen: list[Seen] = []
        super().__init__(("127.0.0.1", 0), _Handler)

    def get_request(self) -> tuple[socket.socket, Any]:
        conn, address = self.socket.accept()
        if conn.recv(1, socket.MSG_PEEK) == b"\x16":
            conn = self.tls.wrap_socket(conn, server_side=True)
        return conn, address


class _Handler(BaseHTTPRequestHandler):
    server: _EitherServer

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        seen = Seen(
            isinstance(self.connection, ssl.SSLSocket),
            self.headers.get("Host", ""),
            self.path,
            self.headers.get("Authorization"),
        )
        self.server.seen.append(seen)
        status, headers, body = self.server.answer(seen)
        data = json.dumps(body).encode()
        self.send_response(status)
        for name, value in {**headers, "Content-Type": "application/json"}.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> ssl.SSLContext:
    folder = tmp_path_factory.mktemp("pki")
    cert, key = make_serving_cert(folder, "registry", make_ca(folder), ["127.0.0.1", "localhost"])
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    return context


@pytest.fixture
def serve(tls: ssl.SSLContext) -> Iterator[Callable[[Callable[[Seen], Answer]], _EitherServer]]:
    servers: list[_EitherServer] = []

    def start(answer: Callable[[Seen], Answer]) -> _EitherServer:
        server = _EitherServer(tls, answer)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


async def listed(url: str, tmp_path: Path) -> tuple[list[str], str | None]:
    """The repositories the catalogue lists from ``url`` with credentials ``u``/``p``
    (TLS unverified: the test's own CA), and the registry's error."""
    robot = tmp_path / "robot.json"
    robot.write_text(json.dumps({"username": "u", "password": "p"}))
    entry = {"url": url, "credentials": {"file": str(robot)}, "insecure": True}
    settings = [RegistrySettings.from_config(0, entry)]
    images = ImageCatalogue(settings, page_size=1, timeout=5, describe_tags=0)
    try:
        await images.refresh()
        [status] = images.statuses()
        return sorted(r.name for r in images.repositories()), status.error
    finally:
        await images.close()


def tags_or(seen: Seen, answer: Callable[[], Answer]) -> Answer:
    if "/tags/list" in seen.path:
        return 200, {}, {"tags": ["1"]}  # listed by name only (describe_tags=0)
    return answer()


async def test_a_link_to_plain_http_is_read_over_the_registrys_own_https(
    serve: Callable[[Callable[[Seen], Answer]], _EitherServer], tmp_path: Path
) -> None:
    """Page one's ``Link`` names the same host and port with ``http://``: the next page is
    read over https all the same, so the Basic credentials never go out in the clear."""
    port: list[int] = []

    def answer(seen: Seen) -> Answer:
        if seen.authorization != BASIC:
            return 401, {"WWW-Authenticate": 'Basic realm="r"'}, {}
        if "last=a" in seen.path:
            return 200, {}, {"repositories": ["b"]}
        link = f'<http://127.0.0.1:{port[0]}/v2/_catalog?n=1&last=a>; rel="next"'
        return tags_or(seen, lambda: (200, {"Link": link}, {"repositories": ["a"]}))

    server = serve(answer)
    port.append(server.server_address[1])
    names, error = await listed(f"https://127.0.0.1:{port[0]}", tmp_path)
    in_clear = [s for s in server.seen if not s.tls]
    assert not in_clear, in_clear
    assert (names, error) == (["a", "b"], None)
    assert any("last=a" in s.path and s.authorization == BASIC for s in server.seen)


def token_registry(realm: Callable[[Seen], str]) -> Callable[[Seen], Answer]:
    """A registry that asks for a Bearer token from ``realm`` (the same server answers
    ``/token``, over either scheme, to whoever asks with the Basic pair)."""

    def answer(seen: Seen) -> Answer:
        if seen.path.startswith("/token"):
            if seen.authorization != BASIC:
                return 401, {}, {}
            return 200, {}, {"token": "tok", "expires_in": 300}
        if seen.authorization != "Bearer tok":
            challenge = f'Bearer realm="{realm(seen)}",service="registry"'
            return 401, {"WWW-Authenticate": challenge}, {}
        return tags_or(seen, lambda: (200, {}, {"repositories": ["a"]}))

    return answer


async def listed_with_token(
    serve: Callable[[Callable[[Seen], Answer]], _EitherServer],
    tmp_path: Path,
    scheme: str,
    realm: str,
) -> tuple[_EitherServer, list[str], str | None]:
    """The catalogue of a registry over ``scheme`` whose token service is at ``realm``
    (``{host}``: the registry's own, ``{port}``: its port on another host name)."""
    server = serve(
        token_registry(lambda s: realm.format(host=s.host, port=server.server_address[1]))
    )
    names, error = await listed(f"{scheme}://127.0.0.1:{server.server_address[1]}", tmp_path)
    return server, names, error


@pytest.mark.parametrize(
    ("scheme", "realm"),
    [
        ("https", "http://{host}/token"),  # the registry's own host, in the clear
        ("https", "http://localhost:{port}/token"),
        ("http", "http://localhost:{port}/token"),  # another host than the http registry's
    ],
)
async def test_a_token_service_over_plain_http_gets_no_credentials(
    serve: Callable[[Callable[[Seen], Answer]], _EitherServer],
    tmp_path: Path,
    scheme: str,
    realm: str,
) -> None:
    server, names, error = await listed_with_token(serve, tmp_path, scheme, realm)
    carried = [s for s in server.seen if s.authorization == BASIC]
    assert not carried, carried
    assert not [s for s in server.seen if s.path.startswith("/token")], server.seen
    assert names == [] and error is not None
    assert "over http" in error and "credentials" in error, error


@pytest.mark.parametrize(
    ("scheme", "realm"),
    [
        ("https", "https://{host}/token"),
        ("https", "https://localhost:{port}/token"),  # another host, over https
        ("http", "http://{host}/token"),  # the http registry's own host, as configured
        ("http", "https://localhost:{port}/token"),
    ],
)
async def test_a_token_service_over_https_or_on_the_http_registrys_host_gets_them(
    serve: Callable[[Callable[[Seen], Answer]], _EitherServer],
    tmp_path: Path,
    scheme: str,
    realm: str,
) -> None:
    server, names, error = await listed_with_token(serve, tmp_path, scheme, realm)
    assert (names, error) == (["a"], None)
    [asked, *_] = [s for s in server.seen if s.path.startswith("/token")]
    assert asked.authorization == BASIC
    assert asked.tls == realm.startswith("https")
