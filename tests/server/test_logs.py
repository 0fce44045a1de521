"""GET jobs/{id}/logs: last N lines, byte ranges with the log's size, and follow."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from jupyter_server.utils import url_escape, url_path_join

from jupyter_pai.backends.local import backend as backend_module

from .pai import PAIClient, job_spec, wait_for_file

LINES = [f"line {i:03d} " + "x" * (i % 7) for i in range(1, 51)]


async def finished_log_job(pai: PAIClient) -> tuple[str, str]:
    spec = job_spec(
        "fifty_lines",
        {
            "worker": {
                "commands": [
                    "for l in " + " ".join(f"'{line}'" for line in LINES) + '; do echo "$l"; done'
                ]
            }
        },
    )
    job_id = (await pai.submit(spec))["id"]
    await pai.wait_state(job_id, "SUCCEEDED")
    full = await pai.log(job_id, "worker", 0)
    assert full == "".join(line + "\n" for line in LINES)
    return job_id, full


async def test_tail_gives_the_last_lines(pai: PAIClient) -> None:
    job_id, full = await finished_log_job(pai)
    assert await pai.log(job_id, "worker", 0, tail=5) == "".join(line + "\n" for line in LINES[-5:])
    assert await pai.log(job_id, "worker", 0, tail=1) == LINES[-1] + "\n"
    assert await pai.log(job_id, "worker", 0, tail=0) == ""
    assert await pai.log(job_id, "worker", 0, tail=500) == full
    # Without role the first task's log is meant; its name comes back in X-Task.
    r = await pai.log_response(job_id, tail=2)
    assert r.code == 200 and r.headers["X-Task"] == "worker-0"
    assert r.text == "".join(line + "\n" for line in LINES[-2:])


async def test_byte_ranges_and_log_size(pai: PAIClient) -> None:
    job_id, full = await finished_log_job(pai)
    raw = full.encode()
    r = await pai.log_response(job_id, "worker", 0, offset=10, limit=25)
    assert r.code == 200
    assert r.body == raw[10:35]
    assert int(r.headers["X-Log-Size"]) == len(raw)
    assert (await pai.log_response(job_id, "worker", 0, offset=len(raw) - 8)).body == raw[-8:]
    assert (await pai.log_response(job_id, "worker", 0, offset=len(raw) + 100)).body == b""
    assert (await pai.log_response(job_id, "worker", 0, limit=12)).body == raw[:12]
    # Consecutive ranges put the whole log back together.
    pieces = [
        (await pai.log_response(job_id, "worker", 0, offset=o, limit=100)).body
        for o in range(0, len(raw), 100)
    ]
    assert b"".join(pieces) == raw


async def test_bad_log_queries_are_json_errors(pai: PAIClient) -> None:
    job_id, _ = await finished_log_job(pai)
    for params in ({"tail": "-1"}, {"offset": "abc"}, {"limit": "1.5"}):
        r = await pai.log_response(job_id, "worker", 0, **params)
        assert r.code == 400, (params, r)
        body = r.json()
        assert body["message"] and body["errors"][0]["path"] == next(iter(params)), body
    r = await pai.log_response(job_id, "nosuchrole", 0)
    assert r.code == 404 and "nosuchrole" in r.json()["message"]
    r = await pai.log_response(job_id, "worker", 3)
    assert r.code == 404


async def test_follow_streams_lines_as_they_are_written(pai: PAIClient) -> None:
    spec = job_spec(
        "chatty",
        {
            "worker": {
                "commands": [
                    "echo early",
                    wait_for_file("release-chatty"),
                    "for i in 1 2 3 4 5; do echo late $i; sleep 0.05; done",
                ]
            }
        },
    )
    job_id = (await pai.submit(spec))["id"]
    await pai.wait_state(job_id, "RUNNING")
    received: list[bytes] = []
    stream = asyncio.ensure_future(
        pai.fetch(
            "pai",
            "api",
            "jobs",
            job_id,
            "logs",
            params={"role": "worker", "follow": "true"},
            streaming_callback=received.append,
            request_timeout=60,
        )
    )

    async def early_seen() -> bool:
        assert not stream.done(), "the follow stream ended while the task still runs"
        return b"early\n" in b"".join(received)

    await pai.wait_for(early_seen, "the first line through the follow stream", timeout=30)
    # The task cannot end before it is released: the line came while it was running.
    assert (await pai.job(job_id))["state"] == "RUNNING"
    assert not stream.done()
    pai.release("release-chatty")
    response = await asyncio.wait_for(stream, timeout=30)  # ends by itself when the task does
    assert response.code == 200
    text = b"".join(received).decode()
    assert text == "early\n" + "".join(f"late {i}\n" for i in range(1, 6))
    assert (await pai.job(job_id))["state"] == "SUCCEEDED"
    assert await pai.log(job_id, "worker", 0) == text


async def test_follow_on_a_finished_task_returns_the_log_and_ends(pai: PAIClient) -> None:
    job_id, _ = await finished_log_job(pai)
    r = await pai.log_response(job_id, "worker", 0, follow="true", tail=3)
    assert r.code == 200 and r.text == "".join(line + "\n" for line in LINES[-3:])


async def test_a_follower_that_leaves_stops_being_served(
    pai: PAIClient,
    jp_http_port: int,
    jp_base_url: str,
    jp_auth_header: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A closed log viewer must not leave the server polling a quiet task's log until the
    task ends (which may be days)."""
    open_streams: set[int] = set()
    real = backend_module.stream_file

    async def tracked(*args: Any, **kwargs: Any) -> AsyncIterator[bytes]:
        key = id(args)
        open_streams.add(key)
        try:
            async for chunk in real(*args, **kwargs):
                yield chunk
        finally:
            open_streams.discard(key)

    monkeypatch.setattr(backend_module, "stream_file", tracked)
    spec = job_spec(
        "quiet", {"worker": {"commands": ["echo hello", wait_for_file("release-quiet")]}}
    )
    job_id = (await pai.submit(spec))["id"]
    await pai.wait_log(job_id, "hello", "worker")

    reader, writer = await asyncio.open_connection("127.0.0.1", jp_http_port)
    path = url_path_join(jp_base_url, "pai/api/jobs", url_escape(job_id), "logs")
    writer.write(
        f"GET {path}?follow=true HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Authorization: {jp_auth_header['Authorization']}\r\n\r\n".encode()
    )
    await writer.drain()
    received = b""
    while b"hello" not in received:
        received += await asyncio.wait_for(reader.read(4096), timeout=20)
    assert received.startswith(b"HTTP/1.1 200")
    assert len(open_streams) == 1
    writer.close()  # the viewer goes away while the task is quiet

    async def released() -> bool:
        return not open_streams

    await pai.wait_for(released, "the server to drop the follower", timeout=5)
    assert (await pai.job(job_id))["state"] == "RUNNING"
    pai.release("release-quiet")
    await pai.wait_state(job_id, "SUCCEEDED")
