"""The server parses request bodies in a worker process: what it returns and the errors it
raises come back as they are, and a worker that dies is replaced."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from jupyter_pai.errors import FieldError, SpecError, Unavailable
from jupyter_pai.server import parsing
from jupyter_pai.server.parsing import in_worker, job_from_body
from tests.planted import plant, ran


async def test_a_job_and_its_refusal_come_back_from_the_worker() -> None:
    parsed = await in_worker(job_from_body, b"name: t\ncommand: 'true'\n", False, "research")
    assert parsed.job.name == "t" and parsed.job.defaults.virtual_cluster == "research"
    with pytest.raises(SpecError) as info:
        await in_worker(job_from_body, b'{"name": "t", "command": "x", "gpus": -1}', True, None)
    assert info.value.status == 400
    assert info.value.errors == [FieldError("gpus", "must be ≥ 0 (got -1)")]


async def test_a_worker_that_dies_is_replaced() -> None:
    with pytest.raises(Unavailable):
        await in_worker(os._exit, 1)  # dies, and again on the worker that replaces it
    parsed = await in_worker(job_from_body, b"name: t\ncommand: 'true'\n", False, None)
    assert parsed.job.name == "t"


async def test_the_worker_imports_nothing_from_the_servers_working_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The worker is the server's own program: a ``multiprocessing.py``, ``json.py`` or
    ``jupyter_pai`` in the folder the server was started in never runs in it."""
    markers = plant(tmp_path)
    monkeypatch.chdir(tmp_path)
    worker = parsing._Worker()  # started afresh, here
    monkeypatch.setattr(parsing, "_WORKER", worker)
    got: object
    try:
        got = (await in_worker(job_from_body, b"name: t\ncommand: 'true'\n", False, None)).job.name
    except Unavailable as error:
        got = error
    finally:
        worker.close()
    assert not ran(markers), ran(markers)
    assert got == "t"
