"""Writing to a storage through the REST API on the local backend: uploads (whole, in
pieces with Content-Range, resumed after a cut connection), folders, moves, deletes and
folder archives; a read-only storage, a path leading out (``..`` or a planted symbolic
link) and a full volume are refused with nothing written where it should not be."""

from __future__ import annotations

import asyncio
import io
import json
import os
import subprocess
import tarfile
import zipfile
from collections.abc import Iterator
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Any

import pytest
from jupyter_server.utils import url_path_join

from jupyter_pai.backends.storage_ops import is_upload_temp
from jupyter_pai.server.routes import PREFIX
from tests.folders import snapshot

from .pai import PAIClient
from .test_hostile_requests import _cookie, _login

PIECE_LIMIT = 2 * 1024 * 1024


@pytest.fixture
def read_only_root(tmp_path: Path) -> Path:
    root = tmp_path / "storage-shared"
    root.mkdir()
    (root / "given.txt").write_text("read me")
    (root / "folder").mkdir()
    return root


@pytest.fixture
def small_root(tmp_path: Path) -> Path:
    root = tmp_path / "storage-small"
    root.mkdir()
    return root


@pytest.fixture
def pai_extra_config(storage_root: Path, read_only_root: Path, small_root: Path) -> dict[str, Any]:
    return {
        "PAIConfig": {"storage_piece_bytes": PIECE_LIMIT},
        "LocalBackend": {
            "stop_grace_seconds": 2,
            "storages_config": {
                "work": {"path": str(storage_root), "mountPath": "/mnt/work"},
                "shared": {"path": str(read_only_root), "readOnly": True},
                "small": {"path": str(small_root)},
            },
        },
    }


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    secret = tmp_path / "outside"
    secret.mkdir()
    (secret / "private.txt").write_text("not for you")
    return secret


class Raw:
    """Requests with the path sent exactly as written, any verb, any headers."""

    def __init__(self, client: Any, base_url: str, auth: dict[str, str]) -> None:
        self.client, self.base_url, self.auth = client, base_url, auth

    async def __call__(
        self,
        method: str,
        path: str,
        body: bytes | str | None = None,
        headers: dict[str, str] | None = None,
    ) -> Any:
        if body is None and method in ("PUT", "POST", "PATCH"):
            body = b""
        return await self.client.fetch(
            url_path_join(self.base_url, PREFIX, "storage", path),
            method=method,
            body=body,
            headers={**self.auth, **(headers or {})},
            raise_error=False,
            allow_nonstandard_methods=True,
            request_timeout=60,
        )


@pytest.fixture
def raw(http_server_client: Any, jp_base_url: str, jp_auth_header: dict[str, str]) -> Raw:
    return Raw(http_server_client, jp_base_url, jp_auth_header)


def error_of(r: Any) -> dict[str, Any]:
    assert r.headers["Content-Type"].startswith("application/json"), (r.code, r.body[:300])
    body: dict[str, Any] = json.loads(r.body)
    assert body["message"], body
    return body


def fields(r: Any) -> list[str]:
    return [e["path"] for e in error_of(r)["errors"]]


def piece_headers(start: int, data: bytes, total: int) -> dict[str, str]:
    return {"Content-Range": f"bytes {start}-{start + len(data) - 1}/{total}"}


async def test_a_whole_file_is_uploaded_replaced_and_read_back(
    pai: PAIClient, storage_root: Path
) -> None:
    data = os.urandom(300_000)
    r = await pai.request(
        "PUT",
        "storage",
        "work",
        "new",
        "dir",
        "up.bin",
        body=data,
        headers={"Content-Type": "application/octet-stream"},
    )
    assert r.code == 200, r
    assert r.json() == {
        "storage": "work",
        "path": "new/dir/up.bin",
        "received": len(data),
        "total": len(data),
        "complete": True,
    }
    assert (storage_root / "new" / "dir" / "up.bin").read_bytes() == data
    got = await pai.request("GET", "storage", "work", "new", "dir", "up.bin")
    assert got.body == data and got.headers["Content-Length"] == str(len(data))
    modified = parsedate_to_datetime(got.headers["Last-Modified"]).timestamp()
    assert abs(modified - (storage_root / "new" / "dir" / "up.bin").stat().st_mtime) < 1.5

    r = await pai.request("PUT", "storage", "work", "new", "dir", "up.bin", body=b"smaller")
    assert r.code == 200 and r.json()["complete"] is True
    assert (storage_root / "new" / "dir" / "up.bin").read_bytes() == b"smaller"
    r = await pai.request("PUT", "storage", "work", "empty.txt", body=b"")
    assert (
        r.code == 200 and r.json()["complete"] and (storage_root / "empty.txt").stat().st_size == 0
    )
    assert sorted(os.listdir(storage_root / "new" / "dir")) == ["up.bin"]


async def test_pieces_with_content_range_and_a_wrong_offset_is_a_409(
    pai: PAIClient, storage_root: Path
) -> None:
    data = os.urandom(PIECE_LIMIT + PIECE_LIMIT // 2)
    first, second = data[:PIECE_LIMIT], data[PIECE_LIMIT:]
    where = ("storage", "work", "big.bin")
    r = await pai.request("PUT", *where, body=first, headers=piece_headers(0, first, len(data)))
    assert r.code == 200, r
    assert r.json() == {
        "storage": "work",
        "path": "big.bin",
        "received": PIECE_LIMIT,
        "total": len(data),
        "complete": False,
    }
    # Not under its name yet, not listed; its state says how far it came.
    assert not (storage_root / "big.bin").exists()
    assert (await pai.get("storage", "work"))["entries"] == []
    assert [n for n in os.listdir(storage_root) if is_upload_temp(n)]
    state = (await pai.request("GET", *where, params={"upload": "1"})).json()
    assert state["received"] == PIECE_LIMIT and state["complete"] is False

    for start in (0 + 100, PIECE_LIMIT - 1, PIECE_LIMIT + 1):
        r = await pai.request(
            "PUT", *where, body=second[:10], headers=piece_headers(start, second[:10], len(data))
        )
        assert r.code == 409, (start, r)
        assert r.headers["Upload-Offset"] == str(PIECE_LIMIT)
        assert "Content-Range" in fields(r) and str(PIECE_LIMIT) in r.text
    r = await pai.request(
        "PUT", *where, body=second, headers=piece_headers(PIECE_LIMIT, second, len(data))
    )
    assert r.code == 200 and r.json()["complete"] is True and r.json()["received"] == len(data)
    assert (storage_root / "big.bin").read_bytes() == data
    assert os.listdir(storage_root) == ["big.bin"]
    assert (await pai.request("GET", *where, params={"upload": "1"})).json()["received"] == 0

    # A range that does not match its body, or is not a range, is a 400 naming it.
    for header in ("bytes 0-9/5", "bytes 5-1/10", "bytes 0-3/10", "0-9/10", "bytes 0-9/*"):
        r = await pai.request("PUT", *where, body=b"x" * 10, headers={"Content-Range": header})
        assert r.code == 400, (header, r)
        assert fields(r) == ["Content-Range"], header
    assert (storage_root / "big.bin").read_bytes() == data


async def test_a_body_over_the_piece_limit_is_a_413_before_it_is_read(
    pai: PAIClient,
    storage_root: Path,
    jp_http_port: int,
    jp_base_url: str,
    jp_auth_header: dict[str, str],
) -> None:
    # Only the headers are sent: the answer comes without the body being read.
    reader, writer = await asyncio.open_connection("127.0.0.1", jp_http_port)
    target = url_path_join(jp_base_url, PREFIX, "storage", "work", "huge.bin")
    head = (
        f"PUT {target} HTTP/1.1\r\nHost: 127.0.0.1:{jp_http_port}\r\n"
        f"Authorization: {jp_auth_header['Authorization']}\r\n"
        f"Content-Length: {5 * 1024**3}\r\n\r\n"
    )
    writer.write(head.encode())
    await writer.drain()
    answer = await asyncio.wait_for(reader.read(65536), 30)
    writer.close()
    status, _, rest = answer.partition(b"\r\n")
    assert b" 413 " in status, answer[:500]
    body = json.loads(rest.partition(b"\r\n\r\n")[2])
    assert "Content-Range" in body["message"] and str(PIECE_LIMIT) in body["message"]
    assert body["errors"][0]["path"] == "Content-Length"

    r = await pai.request("PUT", "storage", "work", "over.bin", body=b"x" * (PIECE_LIMIT + 1))
    assert r.code == 413, r

    # A body in HTTP chunks has no length to check against the limit: refused, named.
    reader, writer = await asyncio.open_connection("127.0.0.1", jp_http_port)
    head = (
        f"PUT {target} HTTP/1.1\r\nHost: 127.0.0.1:{jp_http_port}\r\n"
        f"Authorization: {jp_auth_header['Authorization']}\r\n"
        "Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"
    )
    writer.write(head.encode())
    await writer.drain()
    answer = await asyncio.wait_for(reader.read(65536), 30)
    writer.close()
    assert b" 400 " in answer.partition(b"\r\n")[0], answer[:500]
    assert b'"path": "Content-Length"' in answer
    assert os.listdir(storage_root) == []


async def test_an_upload_cut_mid_body_resumes_from_what_arrived(
    pai: PAIClient,
    storage_root: Path,
    jp_http_port: int,
    jp_base_url: str,
    jp_auth_header: dict[str, str],
) -> None:
    data = os.urandom(3 * 1024 * 1024 + 123)
    where = ("storage", "work", "resumed", "file.bin")
    first = data[: 1024 * 1024]
    r = await pai.request("PUT", *where, body=first, headers=piece_headers(0, first, len(data)))
    assert r.code == 200 and r.json()["received"] == len(first)

    # The next piece: its headers and half of its body, then the connection closes.
    piece = data[len(first) : len(first) + PIECE_LIMIT]
    sent = len(piece) // 2 + 1000
    _reader, writer = await asyncio.open_connection("127.0.0.1", jp_http_port)
    target = url_path_join(jp_base_url, PREFIX, "storage", "work", "resumed", "file.bin")
    head = (
        f"PUT {target} HTTP/1.1\r\nHost: 127.0.0.1:{jp_http_port}\r\n"
        f"Authorization: {jp_auth_header['Authorization']}\r\n"
        f"Content-Length: {len(piece)}\r\n"
        f"Content-Range: bytes {len(first)}-{len(first) + len(piece) - 1}/{len(data)}\r\n\r\n"
    )
    writer.write(head.encode() + piece[:sent])
    await writer.drain()
    await asyncio.sleep(0.5)
    writer.close()
    await writer.wait_closed()

    state = (await pai.request("GET", *where, params={"upload": "1"})).json()
    received = state["received"]
    # What arrived was kept (the server may not have read the last bytes the client sent).
    assert len(first) < received <= len(first) + sent, state
    assert not (storage_root / "resumed" / "file.bin").exists()
    assert (await pai.get("storage", "work", "resumed"))["entries"] == []

    while received < len(data):
        chunk = data[received : received + PIECE_LIMIT]
        r = await pai.request(
            "PUT", *where, body=chunk, headers=piece_headers(received, chunk, len(data))
        )
        assert r.code == 200, r
        received = r.json()["received"]
    assert r.json()["complete"] is True
    assert (storage_root / "resumed" / "file.bin").read_bytes() == data
    assert os.listdir(storage_root / "resumed") == ["file.bin"]


async def test_folders_moves_and_deletes(pai: PAIClient, storage_root: Path) -> None:
    r = await pai.request(
        "POST", "storage", "work", "a", "b", body=json.dumps({"type": "directory"})
    )
    assert r.code == 201, r
    made = r.json()
    assert made["path"] == "a/b" and made["type"] == "directory" and made["name"] == "b"
    assert (storage_root / "a" / "b").is_dir()
    (storage_root / "a" / "b" / "f.txt").write_text("f")
    r = await pai.request(
        "POST", "storage", "work", "a", "b", "f.txt", body='{"type": "directory"}'
    )
    assert r.code == 409 and fields(r) == ["path"]
    for body in ('{"type": "file"}', "{}", "[1]", "not json"):
        r = await pai.request("POST", "storage", "work", "c", body=body)
        assert r.code == 400, (body, r)
        assert fields(r) in (["type"], ["body"]), body

    r = await pai.request("PATCH", "storage", "work", "a", "b", "f.txt", body='{"path": "a/g.txt"}')
    assert r.code == 200, r
    assert r.json() | {"path": "a/g.txt", "name": "g.txt", "type": "file", "size": 1} == r.json()
    assert (storage_root / "a" / "g.txt").read_text() == "f"
    r = await pai.request("PATCH", "storage", "work", "a", "b", body='{"path": "a/g.txt"}')
    assert r.code == 409 and fields(r) == ["to"], r
    r = await pai.request("PATCH", "storage", "work", "a", body='{"path": "a/b/in"}')
    assert r.code == 400 and fields(r) == ["to"], r
    r = await pai.request("PATCH", "storage", "work", "nope", body='{"path": "x"}')
    assert r.code == 404, r
    for body in ("{}", '{"path": 3}', '{"path": ""}'):
        r = await pai.request("PATCH", "storage", "work", "a", body=body)
        assert r.code == 400 and fields(r) == ["path"], (body, r)

    r = await pai.request("DELETE", "storage", "work", "a")
    assert r.code == 409 and fields(r) == ["recursive"], r
    assert "recursive" in error_of(r)["message"]
    r = await pai.request("DELETE", "storage", "work", "a", params={"recursive": "maybe"})
    assert r.code == 400 and fields(r) == ["recursive"]
    r = await pai.request("DELETE", "storage", "work", "a", "g.txt")
    assert r.code == 204 and r.body == b""
    r = await pai.request("DELETE", "storage", "work", "a", params={"recursive": "true"})
    assert r.code == 204
    assert os.listdir(storage_root) == []
    assert (await pai.request("DELETE", "storage", "work", "a")).code == 404
    assert (await pai.request("DELETE", "storage", "work")).code == 400  # never the root
    assert (await pai.request("DELETE", "storage", "nostorage", "x")).code == 404


async def test_a_folder_downloads_as_an_archive_streamed_while_made(
    pai: PAIClient, storage_root: Path, tmp_path: Path, outside: Path
) -> None:
    (storage_root / "proj" / "data" / "empty").mkdir(parents=True)
    (storage_root / "proj" / "a.txt").write_text("alpha")
    (storage_root / "proj" / "data" / "b.bin").write_bytes(os.urandom(2 * 1024 * 1024))
    os.symlink(outside, storage_root / "proj" / "escape")
    os.symlink(outside / "private.txt", storage_root / "proj" / "leak.txt")
    expected = snapshot(storage_root / "proj")
    del expected["escape"], expected["leak.txt"]
    for fmt, kind in (("zip", "application/zip"), ("tar.gz", "application/gzip")):
        r = await pai.request("GET", "storage", "work", "proj", params={"archive": fmt})
        assert r.code == 200, r
        assert r.headers["Content-Type"] == kind
        assert r.headers["Content-Disposition"] == f'attachment; filename="proj.{fmt}"'
        assert "Content-Length" not in r.headers  # chunked: made while it is sent
        assert b"not for you" not in r.body
        unpacked = tmp_path / fmt
        if fmt == "zip":
            zipfile.ZipFile(io.BytesIO(r.body)).extractall(unpacked)
        else:
            tarfile.open(fileobj=io.BytesIO(r.body), mode="r:gz").extractall(
                unpacked, filter="data"
            )
        assert snapshot(unpacked) == expected, fmt
    r = await pai.request("GET", "storage", "work", params={"archive": "zip"})
    assert r.code == 200 and "proj/a.txt" in zipfile.ZipFile(io.BytesIO(r.body)).namelist()
    assert r.headers["Content-Disposition"] == 'attachment; filename="work.zip"'
    r = await pai.request("GET", "storage", "work", "proj", params={"archive": "rar"})
    assert r.code == 400 and fields(r) == ["archive"]
    r = await pai.request("GET", "storage", "work", "proj", "a.txt", params={"archive": "zip"})
    assert r.code == 409, r


async def test_a_read_only_storage_refuses_every_write(
    pai: PAIClient, read_only_root: Path
) -> None:
    before = snapshot(read_only_root)
    refused = {
        "put": await pai.request("PUT", "storage", "shared", "new.txt", body=b"x"),
        "put over": await pai.request("PUT", "storage", "shared", "given.txt", body=b"x"),
        "post": await pai.request("POST", "storage", "shared", "dir", body='{"type": "directory"}'),
        "patch": await pai.request("PATCH", "storage", "shared", "given.txt", body='{"path": "b"}'),
        "delete": await pai.request("DELETE", "storage", "shared", "folder"),
        "delete all": await pai.request(
            "DELETE", "storage", "shared", "folder", params={"recursive": "true"}
        ),
    }
    for what, r in refused.items():
        assert r.code == 403, (what, r)
        assert error_of(r)["message"] == "storage shared is read-only", what
    assert snapshot(read_only_root) == before
    # Reads still work, archives included.
    assert (await pai.request("GET", "storage", "shared", "given.txt")).body == b"read me"
    r = await pai.request("GET", "storage", "shared", params={"archive": "zip"})
    assert r.code == 200 and "given.txt" in zipfile.ZipFile(io.BytesIO(r.body)).namelist()


async def test_no_write_leads_out_by_dot_dot_or_a_planted_link(
    raw: Raw, storage_root: Path, outside: Path
) -> None:
    (storage_root / "mine.txt").write_text("mine")
    (storage_root / "dir").mkdir()
    os.symlink(outside, storage_root / "escape")
    os.symlink(outside / "private.txt", storage_root / "leak.txt")
    before, mine = snapshot(outside), snapshot(storage_root)
    directory = '{"type": "directory"}'
    calls = [
        # (method, path, body, expected status)
        ("PUT", "work/../x.txt", b"x", 400),
        ("PUT", "work/dir/%2e%2e/%2e%2e/x.txt", b"x", 400),
        ("PUT", "work/%2Ftmp%2Fx.txt", b"x", 400),
        ("PUT", "work/escape/x.txt", b"x", 403),
        ("PUT", "work/leak.txt", b"x", 403),
        ("GET", "work/escape/x.txt?upload=1", None, 403),
        ("POST", "work/../made", directory, 400),
        ("POST", "work/escape/made", directory, 403),
        ("PATCH", "work/mine.txt", '{"path": "../mine.txt"}', 400),
        ("PATCH", "work/mine.txt", '{"path": "/tmp/mine.txt"}', 400),
        ("PATCH", "work/mine.txt", '{"path": "escape/mine.txt"}', 403),
        ("PATCH", "work/escape/private.txt", '{"path": "stolen.txt"}', 403),
        ("PATCH", "work/dir/%2e%2e/%2e%2e/outside/private.txt", '{"path": "s.txt"}', 400),
        ("DELETE", "work/../outside/private.txt", None, 400),
        ("DELETE", "work/escape/private.txt", None, 403),
        ("DELETE", "work/escape?recursive=true", None, 403),
        ("GET", "work/escape?archive=zip", None, 403),
        ("GET", "work/%2e%2e?archive=tar.gz", None, 400),
    ]
    for method, path, body, status in calls:
        r = await raw(method, path, body)
        assert r.code == status, (method, path, r.code, r.body[:300])
        named = fields(r)
        assert named and set(named) <= {"path", "to"}, (method, path, named)
        assert b"not for you" not in r.body
    assert snapshot(outside) == before
    assert snapshot(storage_root) == mine


async def test_mutations_by_cookie_need_the_xsrf_token(
    http_server_client: Any, jp_base_url: str, jp_serverapp: Any, storage_root: Path
) -> None:
    (storage_root / "kept.txt").write_text("kept")
    (storage_root / "dir").mkdir()
    token = jp_serverapp.identity_provider.token
    mine = await _login(http_server_client, jp_base_url, token)
    mutations = [
        ("PUT", "work/forged.txt", b"forged"),
        ("POST", "work/forged-dir", b'{"type": "directory"}'),
        ("PATCH", "work/kept.txt", b'{"path": "moved.txt"}'),
        ("DELETE", "work/kept.txt", None),
        ("DELETE", "work/dir?recursive=true", None),
    ]
    before = snapshot(storage_root)
    for method, path, body in mutations:
        r = await http_server_client.fetch(
            url_path_join(jp_base_url, PREFIX, "storage", path),
            method=method,
            body=body,
            headers={"Cookie": _cookie(mine)},
            raise_error=False,
            allow_nonstandard_methods=True,
        )
        assert r.code == 403, (method, path, r.code, r.body[:300])
        assert b"xsrf" in r.body.lower(), r.body[:300]
    assert snapshot(storage_root) == before
    r = await http_server_client.fetch(
        url_path_join(jp_base_url, PREFIX, "storage", "work/forged.txt"),
        method="PUT",
        body=b"mine",
        headers={"Cookie": _cookie(mine), "X-XSRFToken": mine["_xsrf"]},
        raise_error=False,
    )
    assert r.code == 200 and (storage_root / "forged.txt").read_bytes() == b"mine"


@pytest.fixture
def full_volume(small_root: Path) -> Iterator[Path]:
    """Storage ``small`` as a 2 MiB tmpfs (mounted over its folder once the server runs)."""
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(small_root)], check=True)
    try:
        yield small_root
    finally:
        subprocess.run(["umount", str(small_root)], check=True)


async def test_a_full_volume_is_a_507_with_nothing_half_written(
    pai: PAIClient, full_volume: Path
) -> None:
    small_root = full_volume
    (small_root / "keep.txt").write_text("already here")
    too_big = os.urandom(PIECE_LIMIT)  # the volume's size, and a file is there already
    r = await pai.request("PUT", "storage", "small", "big.bin", body=too_big)
    assert r.code == 507, r
    assert error_of(r)["message"] == "storage small is full"
    assert sorted(os.listdir(small_root)) == ["keep.txt"]  # no big.bin, no temp file

    # In pieces: the first fits, the second does not; the upload is gone, not half there.
    data = os.urandom(3 * 1024 * 1024)
    first, second = data[: 1024 * 1024], data[1024 * 1024 : 3 * 1024 * 1024]
    where = ("storage", "small", "sub", "pieces.bin")
    r = await pai.request("PUT", *where, body=first, headers=piece_headers(0, first, len(data)))
    assert r.code == 200, r
    r = await pai.request(
        "PUT", *where, body=second, headers=piece_headers(len(first), second, len(data))
    )
    assert r.code == 507 and "full" in error_of(r)["message"], r
    assert os.listdir(small_root / "sub") == []
    assert (await pai.request("GET", *where, params={"upload": "1"})).json()["received"] == 0
    # What fits still goes through: the failed uploads took no room.
    r = await pai.request("PUT", "storage", "small", "fits.txt", body=b"fits")
    assert r.code == 200 and (small_root / "fits.txt").read_bytes() == b"fits"


class TestAReadOnlyUser:
    @pytest.fixture
    def pai_extra_config(self, storage_root: Path) -> dict[str, Any]:
        from .test_authorization import ReadOnly

        return {"ServerApp": {"authorizer_class": ReadOnly}}

    async def test_may_read_but_not_write(self, pai: PAIClient, storage_root: Path) -> None:
        (storage_root / "a.txt").write_text("a")
        assert (await pai.request("GET", "storage", "work", "a.txt")).body == b"a"
        refused = [
            await pai.request("PUT", "storage", "work", "b.txt", body=b"b"),
            await pai.request("POST", "storage", "work", "d", body='{"type": "directory"}'),
            await pai.request("PATCH", "storage", "work", "a.txt", body='{"path": "c.txt"}'),
            await pai.request("DELETE", "storage", "work", "a.txt"),
        ]
        assert [r.code for r in refused] == [403] * 4
        assert all("not authorized to write" in r.text for r in refused)
        assert os.listdir(storage_root) == ["a.txt"]


async def test_a_cancelled_upload_is_discarded_leaving_the_file_as_it_was(
    pai: PAIClient, storage_root: Path
) -> None:
    (storage_root / "kept.bin").write_bytes(b"the old content")
    data = os.urandom(PIECE_LIMIT + 10)
    where = ("storage", "work", "kept.bin")
    first = data[:PIECE_LIMIT]
    r = await pai.request("PUT", *where, body=first, headers=piece_headers(0, first, len(data)))
    assert r.code == 200 and r.json()["received"] == PIECE_LIMIT, r
    assert [n for n in os.listdir(storage_root) if is_upload_temp(n)]
    # The upload is given up: its temporary bytes go, the file under the name stays.
    r = await pai.request("DELETE", *where, params={"upload": "1"})
    assert r.code == 204, r
    assert sorted(os.listdir(storage_root)) == ["kept.bin"]
    assert (storage_root / "kept.bin").read_bytes() == b"the old content"
    assert (await pai.request("GET", *where, params={"upload": "1"})).json()["received"] == 0
    # Nothing to discard is no error; a read-only storage refuses it like any write.
    assert (await pai.request("DELETE", *where, params={"upload": "1"})).code == 204
    r = await pai.request("DELETE", "storage", "shared", "given.txt", params={"upload": "1"})
    assert r.code == 403, r
