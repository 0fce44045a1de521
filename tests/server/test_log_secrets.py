"""No part of a job's secret comes back through its task's log, however the log is read:
byte ranges (every offset, 1 to 3 bytes), the last N lines (every N), follow (while the
task writes a many-line secret a line at a time) and follow from the last N lines."""

from __future__ import annotations

import asyncio
from typing import Any

from jupyter_pai.backends.logredaction import tail_start
from tests import secretlogs

from .pai import PAIClient, job_spec, wait_for_file


async def _follow(pai: PAIClient, job_id: str, **params: Any) -> asyncio.Future[Any]:
    received: list[bytes] = []
    fetch = pai.fetch(
        "pai",
        "api",
        "jobs",
        job_id,
        "logs",
        params={"role": "worker", "follow": "true", **{k: str(v) for k, v in params.items()}},
        streaming_callback=received.append,
        request_timeout=60,
    )

    async def whole() -> bytes:
        response = await fetch
        assert response.code == 200
        return b"".join(received)

    return asyncio.ensure_future(whole())


async def test_no_read_of_a_task_log_shows_any_part_of_a_secret(pai: PAIClient) -> None:
    spec = job_spec(
        "secret_log",
        {
            "worker": {
                "commands": secretlogs.commands(
                    first=wait_for_file("start-secret-log"),
                    then=wait_for_file("release-secret-log"),
                )
            }
        },
        secrets=secretlogs.SECRETS,
    )
    job_id = (await pai.submit(spec))["id"]
    raw_path = pai.state_dir / "jobs" / job_id / "logs" / "worker-0.log"
    await pai.wait_state(job_id, "RUNNING")
    follower = await _follow(pai, job_id)
    await asyncio.sleep(0.3)
    pai.release("start-secret-log")

    async def parked() -> bool:
        return raw_path.exists() and b"two tokens" in raw_path.read_bytes()

    await pai.wait_for(parked, "the task to print its secrets", timeout=30)
    await asyncio.sleep(0.3)
    before = raw_path.read_bytes()
    lines = before.count(b"\n")
    # From the end, from its last line, from inside it, from its first line and before it
    # (the key printed again), early in the first key, before the log: as many followers as
    # the test client serves at once.
    tails = (0, 1, 3, 7, 12, 13, lines - 3, lines + 1)
    tail_followers = {n: await _follow(pai, job_id, tail=n) for n in tails}
    await asyncio.sleep(1)  # every follower's request is in before the log goes on
    pai.release("release-secret-log")
    await pai.wait_state(job_id, "SUCCEEDED")
    raw = raw_path.read_bytes()
    assert raw.startswith(secretlogs.KEY.encode()) and raw.endswith(secretlogs.TOKEN.encode())
    size = len(raw)

    def check(where: str, got: bytes, start: int, end: int = size) -> None:
        assert not secretlogs.revealed(got), (where, got)
        assert got == secretlogs.shown(raw, start, end), where

    check("follow", await asyncio.wait_for(follower, 30), 0)
    for n, tail_follower in tail_followers.items():
        start = tail_start(before, n)
        check(f"follow tail={n}", await asyncio.wait_for(tail_follower, 30), start)
    check("whole", (await pai.log_response(job_id, "worker", 0)).body, 0)
    for n in range(raw.count(b"\n") + 3):
        got = (await pai.log_response(job_id, "worker", 0, tail=n)).body
        check(f"tail={n}", got, tail_start(raw, n))
    for offset in range(size + 1):
        for limit in (1, 2, 3):
            r = await pai.log_response(job_id, "worker", 0, offset=offset, limit=limit)
            assert int(r.headers["X-Log-Size"]) == size
            check(f"offset={offset} limit={limit}", r.body, offset, offset + limit)
        r = await pai.log_response(job_id, "worker", 0, offset=offset)
        check(f"offset={offset}", r.body, offset)
