"""The storage helper pod's server, run here as the pod runs it: the one script
``shipped_server()`` makes (storage_ops and the server, standard library only) in a bare
``python3 -I``, on a folder of this machine. Hidden files follow the ``hidden`` request
parameter the backend adds when ``ContentsManager.allow_hidden`` is on."""

from __future__ import annotations

import io
import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest

from jupyter_pai.backends.kubernetes.storage import shipped_server

TOKEN = "test-token"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class Helper:
    def __init__(self, port: int) -> None:
        self.port = port

    def ask(self, method: str = "GET", body: bytes = b"", **query: str) -> tuple[int, bytes]:
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.port}/?{urlencode(query)}",
            data=body if method in ("PUT", "POST", "PATCH") else None,
            method=method,
            headers={"X-Token": TOKEN},
        )
        try:
            with urllib.request.urlopen(request, timeout=20) as answer:
                return answer.status, answer.read()
        except urllib.error.HTTPError as error:
            return error.code, error.read()

    def doc(self, **query: str) -> Any:
        status, body = self.ask(**query)
        assert status == 200, body
        return json.loads(body)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    r = tmp_path / "claim"
    (r / "sub" / ".git").mkdir(parents=True)
    (r / "sub" / ".git" / "config").write_text("hidden config")
    (r / "sub" / "a.txt").write_text("alpha")
    (r / ".local" / "share" / "jupyter" / "runtime").mkdir(parents=True)
    (r / ".local" / "share" / "jupyter" / "runtime" / "jpserver-1.json").write_text(
        '{"token": "t0k"}'
    )
    (r / ".hidden.txt").write_text("hidden bytes")
    (r / "shown").symlink_to(".hidden.txt")
    return r


@pytest.fixture
def helper(root: Path) -> Iterator[Helper]:
    port = free_port()
    script = shipped_server()
    env = {"PAI_HELPER_TOKEN": TOKEN, "PATH": os.environ.get("PATH", "")}
    # -I: no site-packages, no working folder on sys.path: only the standard library.
    proc = subprocess.Popen(
        [sys.executable, "-I", "-c", script, str(root), str(port), "60"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert b"listening" in line, line + proc.stdout.read()
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline
                time.sleep(0.05)
        yield Helper(port)
    finally:
        proc.kill()
        proc.wait()


def test_the_pod_lists_serves_and_archives_no_hidden_file(helper: Helper) -> None:
    for path in (
        ".hidden.txt",
        ".local/share/jupyter/runtime/jpserver-1.json",
        "sub/.git/config",
        "shown",
        ".none",
    ):
        status, body = helper.ask(path=path)
        assert status == 403, (path, status, body)
        doc = json.loads(body)
        assert doc["error"] == "hidden" and path in doc["message"], doc
    status, _ = helper.ask(path=".local", archive="zip")
    assert status == 403
    assert [e["name"] for e in helper.doc(path=".")["entries"]] == ["sub"]
    assert [e["name"] for e in helper.doc(path="sub")["entries"]] == ["a.txt"]
    status, data = helper.ask(path=".", archive="zip")
    assert status == 200
    assert sorted(zipfile.ZipFile(io.BytesIO(data)).namelist()) == ["sub/", "sub/a.txt"]
    assert b"hidden" not in data and b"t0k" not in data
    for method, query in (
        ("PUT", {"path": ".bashrc", "offset": "0", "total": "1"}),
        ("POST", {"path": ".config"}),
        ("PATCH", {"path": "sub/a.txt", "to": ".a.txt"}),
        ("PATCH", {"path": ".hidden.txt", "to": "seen.txt"}),
        ("DELETE", {"path": ".hidden.txt", "recursive": "0"}),
    ):
        status, body = helper.ask(method, b"x" if method == "PUT" else b"", **query)
        assert status == 403 and json.loads(body)["error"] == "hidden", (method, query, body)


def test_the_pod_serves_hidden_files_when_asked_to(helper: Helper, root: Path) -> None:
    status, body = helper.ask(path=".hidden.txt", hidden="1")
    assert (status, body) == (200, b"hidden bytes")
    assert helper.ask(path="shown", hidden="1") == (200, b"hidden bytes")
    names = [e["name"] for e in helper.doc(path=".", hidden="1")["entries"]]
    assert names == [".hidden.txt", ".local", "shown", "sub"]
    status, data = helper.ask(path="sub", archive="zip", hidden="1")
    assert status == 200 and ".git/config" in zipfile.ZipFile(io.BytesIO(data)).namelist()
    status, _ = helper.ask("PUT", b"x", path=".bashrc", offset="0", total="1", hidden="1")
    assert status == 200 and (root / ".bashrc").read_text() == "x"
