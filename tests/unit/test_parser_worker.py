"""The server parses request bodies in a worker process: what it returns and the errors it
raises come back as they are, and a worker that dies is replaced."""

from __future__ import annotations

import os

import pytest

from jupyter_pai.errors import FieldError, SpecError, Unavailable
from jupyter_pai.server.parsing import in_worker, job_from_body


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
