"""GET storage and storage/{name}/{path}: listing and reading inside the storage, never
outside it."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from jupyter_server.utils import url_path_join

from .pai import PAIClient


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    secret = tmp_path / "outside"
    secret.mkdir()
    (secret / "private.txt").write_text("not for you")
    return secret


@pytest.fixture
def filled(storage_root: Path, outside: Path) -> Path:
    (storage_root / "a.txt").write_text("alpha\n")
    (storage_root / "data").mkdir()
    (storage_root / "data" / "b.csv").write_text("x,y\n1,2\n")
    (storage_root / "data" / "deep").mkdir()
    (storage_root / "empty.txt").write_text("")
    os.symlink(outside, storage_root / "escape")
    os.symlink(outside / "private.txt", storage_root / "data" / "leak.txt")
    os.symlink(storage_root / "data" / "b.csv", storage_root / "inner-link.csv")
    (storage_root / "data" / "deep" / "my file ü #1.txt").write_text("spaced out")
    return storage_root


async def raw_get(client: Any, base_url: str, auth: dict[str, str], path: str) -> Any:
    """GET with the path sent exactly as written (no client-side escaping)."""
    url = url_path_join(base_url, "pai/api/storage", path)
    return await client.fetch(url, headers=auth, raise_error=False)


async def test_storages_are_listed(pai: PAIClient) -> None:
    storages = await pai.items("storage")
    assert storages == [
        {"name": "work", "mountPath": "/mnt/work", "readOnly": False, "description": None}
    ]


async def test_listing_and_reading_files(pai: PAIClient, filled: Path) -> None:
    root = await pai.get("storage", "work")
    assert root["storage"] == "work" and root["path"] == "" and root["type"] == "directory"
    entries = {e["name"]: e for e in root["entries"]}
    assert set(entries) == {"a.txt", "data", "empty.txt", "inner-link.csv"}  # no "escape"
    assert entries["a.txt"] == entries["a.txt"] | {"type": "file", "size": 6, "path": "a.txt"}
    assert entries["data"]["type"] == "directory" and entries["data"]["size"] is None
    assert entries["a.txt"]["modified"]

    data = await pai.get("storage", "work", "data")
    assert data["path"] == "data"
    assert [(e["name"], e["path"], e["type"]) for e in data["entries"]] == [
        ("b.csv", "data/b.csv", "file"),
        ("deep", "data/deep", "directory"),
    ]  # leak.txt points outside: not listed
    (deep,) = (await pai.get("storage", "work", "data/deep"))["entries"]
    assert deep["name"] == "my file ü #1.txt" and deep["path"] == "data/deep/my file ü #1.txt"
    r = await pai.request("GET", "storage", "work", "data", "deep", "my file ü #1.txt")
    assert r.code == 200 and r.body == b"spaced out"
    assert (await pai.get("storage", "work", "data/deep/"))["path"] == "data/deep"

    r = await pai.request("GET", "storage", "work", "data", "b.csv")
    assert r.code == 200 and r.body == b"x,y\n1,2\n"
    assert r.headers["Content-Type"].startswith("text/csv")
    assert "inline" in r.headers["Content-Disposition"]
    r = await pai.request("GET", "storage", "work", "a.txt", params={"download": "1"})
    assert r.body == b"alpha\n" and r.headers["Content-Disposition"].startswith("attachment")
    r = await pai.request("GET", "storage", "work", "empty.txt")
    assert r.code == 200 and r.body == b"" and r.headers["Content-Type"].startswith("text/plain")
    # A link that stays inside the storage is followed.
    assert (await pai.request("GET", "storage", "work", "inner-link.csv")).body == b"x,y\n1,2\n"


async def test_missing_paths_and_storages_are_404(pai: PAIClient, filled: Path) -> None:
    for path in (
        ("work", "nope.txt"),
        ("work", "data", "nope"),
        ("nostorage",),
        ("nostorage", "a.txt"),
    ):
        r = await pai.request("GET", "storage", *path)
        assert r.code == 404, (path, r)
        assert r.json()["message"]


async def test_paths_out_of_the_storage_are_refused(
    pai: PAIClient,
    filled: Path,
    http_server_client: Any,
    jp_base_url: str,
    jp_auth_header: dict[str, str],
) -> None:
    for path in (
        "work/../a.txt",
        "work/data/../../outside/private.txt",
        "work/%2e%2e/outside/private.txt",
        "work/data/%2E%2E/%2e%2e/outside/private.txt",
        "work/..%2Foutside%2Fprivate.txt",
        "work//etc/passwd",
        "work/%2Fetc%2Fpasswd",
    ):
        r = await raw_get(http_server_client, jp_base_url, jp_auth_header, path)
        assert r.code == 400, (path, r.code, r.body)
        body = json.loads(r.body)
        assert body["message"] and body["errors"][0]["path"] == "path", (path, body)
        assert b"not for you" not in r.body and b"root:" not in r.body

    for path in ("work/escape", "work/escape/private.txt", "work/data/leak.txt"):
        r = await raw_get(http_server_client, jp_base_url, jp_auth_header, path)
        assert r.code == 403, (path, r.code, r.body)
        assert b"not for you" not in r.body
