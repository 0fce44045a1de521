"""Hidden files and the server's own folders in a storage, through the REST API on the
local backend. The local backend's default storage is the folder the server started in:
there ``.local/share/jupyter/runtime/jpserver-….json`` holds the server's token and the
state directory holds job secrets in clear and unredacted logs.

Hidden paths (a name starting with ``.``) follow the server's ``ContentsManager.allow_hidden``:
off (Jupyter's default), they are refused (403 naming the path, whether or not it exists)
and left out of listings and archives. The Jupyter runtime directory and jupyter-pai's state
directory are never served, whatever ``allow_hidden`` says and wherever they lie."""

from __future__ import annotations

import io
import json
import tarfile
import zipfile
from pathlib import Path
from typing import Any

import pytest

from .pai import PAIClient
from .test_authorization import ReadOnly

RUNTIME = ".local/share/jupyter/runtime"


@pytest.fixture
def jp_runtime_dir(storage_root: Path) -> Path:
    """The server's runtime directory where a server started in its home folder has it:
    under the storage ``work`` (``JUPYTER_RUNTIME_DIR``, set by pytest-jupyter)."""
    runtime = storage_root / RUNTIME
    runtime.mkdir(parents=True)
    return runtime


@pytest.fixture
def planted(storage_root: Path, pai_state_dir: Path) -> Path:
    (storage_root / "a.txt").write_text("alpha")
    (storage_root / ".hidden.txt").write_text("hidden bytes")
    (storage_root / "data" / ".git").mkdir(parents=True)
    (storage_root / "data" / ".git" / "config").write_text("hidden config")
    (storage_root / "data" / "b.txt").write_text("beta")
    (storage_root / "shown").symlink_to(".hidden.txt")  # a visible name for a hidden file
    # As the store keeps a job with a secret (its spec in clear, its log unredacted).
    job = pai_state_dir / "jobs" / "job-1"
    job.mkdir(parents=True)
    (job / "spec.json").write_text('{"secrets": {"password": "job-secret"}}')
    return storage_root


@pytest.fixture
def pai_extra_config(storage_root: Path, tmp_path: Path) -> dict[str, Any]:
    # ``top`` holds the state directory (tmp_path/pai-state) under a name that is not
    # hidden, as JUPYTER_PAI_STATE_DIR=/work/state does inside a storage /work.
    return {
        "ServerApp": {"authorizer_class": ReadOnly},
        "LocalBackend": {
            "storages_config": {
                "work": {"path": str(storage_root), "mountPath": "/mnt/work"},
                "top": {"path": str(tmp_path)},
            }
        },
    }


def token_file(runtime: Path) -> str:
    (found,) = [p.name for p in runtime.glob("jpserver-*.json")]
    return found


def server_token(runtime: Path) -> str:
    token: str = json.loads((runtime / token_file(runtime)).read_text())["token"]
    assert token
    return token


def files_under(folder: Path) -> dict[Path, bytes]:
    return {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def names_in(data: bytes, fmt: str) -> list[str]:
    if fmt == "zip":  # a folder's name ends in "/" there
        return [n.rstrip("/") for n in zipfile.ZipFile(io.BytesIO(data)).namelist()]
    return tarfile.open(fileobj=io.BytesIO(data), mode="r:gz").getnames()


def secrets_in(body: bytes, token: str) -> list[str]:
    said = [b"hidden bytes", b"hidden config", b"job-secret", token.encode()]
    return [s.decode() for s in said if s in body]


async def test_a_read_only_user_reads_no_hidden_file_nor_the_servers_token(
    pai: PAIClient, planted: Path, jp_runtime_dir: Path, pai_state_dir: Path
) -> None:
    await pai.get("storage", "work")  # the backend started: its state directory is there
    token = server_token(jp_runtime_dir)
    for path in (
        f"{RUNTIME}/{token_file(jp_runtime_dir)}",
        ".local",
        ".hidden.txt",
        ".nothing-there",  # the same answer whether or not it exists
        "data/.git/config",
        "shown",  # a visible link to a hidden file
    ):
        r = await pai.request("GET", "storage", "work", path)
        assert r.code == 403, (path, r)
        body = r.json()
        assert body["errors"][0]["path"] == "path" and "hidden" in body["message"], body
        assert secrets_in(r.body, token) == [], path
    r = await pai.request("GET", "storage", "work", ".local", params={"archive": "zip"})
    assert r.code == 403, r

    listing = await pai.get("storage", "work")
    assert [e["name"] for e in listing["entries"]] == ["a.txt", "data"]
    data = await pai.get("storage", "work", "data")
    assert [e["name"] for e in data["entries"]] == ["b.txt"]

    for fmt in ("zip", "tar.gz"):
        r = await pai.request("GET", "storage", "work", params={"archive": fmt})
        assert r.code == 200, r
        assert sorted(names_in(r.body, fmt)) == ["a.txt", "data", "data/b.txt"], fmt
        assert secrets_in(r.body, token) == [], fmt


async def test_the_state_and_runtime_folders_are_never_served_even_when_not_hidden(
    pai: PAIClient, planted: Path, jp_runtime_dir: Path, pai_state_dir: Path, tmp_path: Path
) -> None:
    await pai.get("storage", "work")
    token = server_token(jp_runtime_dir)
    for path in ("pai-state", "pai-state/jobs/job-1/spec.json", "pai-state/active.json"):
        r = await pai.request("GET", "storage", "top", path)
        assert r.code == 403, (path, r)
        assert "state" in r.json()["message"] and secrets_in(r.body, token) == [], r
    top = await pai.get("storage", "top")
    names = [e["name"] for e in top["entries"]]
    assert "storage-work" in names and "pai-state" not in names
    r = await pai.request("GET", "storage", "top", "pai-state", params={"archive": "zip"})
    assert r.code == 403, r
    r = await pai.request("GET", "storage", "top", params={"archive": "zip"})
    assert r.code == 200, r
    assert not [n for n in names_in(r.body, "zip") if n.startswith("pai-state")]
    assert secrets_in(r.body, token) == []


class TestAllowHidden:
    """``ContentsManager.allow_hidden = True``: dot-files are listed, served and archived;
    the runtime and state folders still are not."""

    @pytest.fixture
    def pai_extra_config(self, storage_root: Path, tmp_path: Path) -> dict[str, Any]:
        return {
            "ContentsManager": {"allow_hidden": True},
            "LocalBackend": {
                "storages_config": {
                    "work": {"path": str(storage_root), "mountPath": "/mnt/work"},
                    "top": {"path": str(tmp_path)},
                }
            },
        }

    async def test_hidden_files_are_served_but_not_the_servers_own_folders(
        self, pai: PAIClient, planted: Path, jp_runtime_dir: Path, pai_state_dir: Path
    ) -> None:
        await pai.get("storage", "work")
        token = server_token(jp_runtime_dir)
        listing = await pai.get("storage", "work")
        names = [e["name"] for e in listing["entries"]]
        assert names == [".hidden.txt", ".local", "a.txt", "data", "shown"]
        assert (await pai.request("GET", "storage", "work", ".hidden.txt")).body == b"hidden bytes"
        assert (await pai.request("GET", "storage", "work", "shown")).body == b"hidden bytes"
        config = await pai.request("GET", "storage", "work", "data/.git/config")
        assert config.body == b"hidden config"
        # .local/share/jupyter holds the runtime folder: listed down to it, not into it.
        jupyter = await pai.get("storage", "work", ".local/share/jupyter")
        assert [e["name"] for e in jupyter["entries"]] == []
        for path in (RUNTIME, f"{RUNTIME}/{token_file(jp_runtime_dir)}"):
            r = await pai.request("GET", "storage", "work", path)
            assert r.code == 403 and "runtime" in r.json()["message"], (path, r)
            assert secrets_in(r.body, token) == [], path
        r = await pai.request("GET", "storage", "top", "pai-state/jobs/job-1/spec.json")
        assert r.code == 403 and "state" in r.json()["message"], r
        for fmt in ("zip", "tar.gz"):
            r = await pai.request("GET", "storage", "work", params={"archive": fmt})
            assert r.code == 200, r
            got = names_in(r.body, fmt)
            assert "data/.git/config" in got and ".hidden.txt" in got, got
            assert not [n for n in got if n.startswith(RUNTIME)], got
            assert token.encode() not in r.body
            r = await pai.request("GET", "storage", "top", params={"archive": fmt})
            assert b"job-secret" not in r.body and token.encode() not in r.body
        # Writes: hidden paths too, never into the runtime or state folders.
        r = await pai.request("PUT", "storage", "work", ".profile", body=b"mine")
        assert r.code == 200 and (planted / ".profile").read_bytes() == b"mine", r
        for path in (f"work/{RUNTIME}/evil.json", "top/pai-state/jobs/job-1/spec.json"):
            r = await pai.request("PUT", "storage", *path.split("/"), body=b"{}")
            assert r.code == 403, (path, r)
        assert not (jp_runtime_dir / "evil.json").exists()
        assert b"job-secret" in (pai_state_dir / "jobs" / "job-1" / "spec.json").read_bytes()


class TestWrites:
    """Writes by a user who may write: no hidden path, nothing in the server's folders."""

    @pytest.fixture
    def pai_extra_config(self, storage_root: Path, tmp_path: Path) -> dict[str, Any]:
        return {
            "LocalBackend": {
                "storages_config": {
                    "work": {"path": str(storage_root), "mountPath": "/mnt/work"},
                    "top": {"path": str(tmp_path)},
                }
            },
        }

    async def test_no_write_reaches_a_hidden_path_or_the_servers_folders(
        self, pai: PAIClient, planted: Path, tmp_path: Path, pai_state_dir: Path
    ) -> None:
        await pai.get("storage", "work")
        before = files_under(tmp_path)
        folder = '{"type": "directory"}'
        refused = {
            "put": ("PUT", "work/.bashrc", b"evil", None),
            "put deep": ("PUT", "work/.ipython/profile_default/startup/x.py", b"evil", None),
            "put in hidden": ("PUT", "work/data/.git/hooks/post-commit", b"evil", None),
            "post": ("POST", "work/.config", folder, None),
            "patch to": ("PATCH", "work/a.txt", '{"path": ".a.txt"}', None),
            "patch from": ("PATCH", "work/.hidden.txt", '{"path": "seen.txt"}', None),
            "delete": ("DELETE", "work/.hidden.txt", None, None),
            "delete tree": ("DELETE", "work/data/.git", None, {"recursive": "true"}),
            "put state": ("PUT", "top/pai-state/jobs/job-1/spec.json", b"{}", None),
            "put runtime": ("PUT", f"work/{RUNTIME}/jpserver-9.json", b"{}", None),
            "patch state": ("PATCH", "top/pai-state", '{"path": "moved"}', None),
            "patch into": ("PATCH", "top/storage-work/a.txt", '{"path": "pai-state/a"}', None),
            "delete state": ("DELETE", "top/pai-state", None, {"recursive": "true"}),
        }
        for what, (method, path, body, params) in refused.items():
            r = await pai.request(method, "storage", *path.split("/"), body=body, params=params)
            assert r.code == 403, (what, r)
            assert r.json()["errors"][0]["path"] in ("path", "to"), (what, r.json())
        assert files_under(tmp_path) == before
        assert not (planted / ".bashrc").exists() and not (planted / ".config").exists()
        # The rest still writes.
        r = await pai.request("PUT", "storage", "work", "data", "c.txt", body=b"c")
        assert r.code == 200, r
