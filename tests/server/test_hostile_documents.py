"""Documents made to be slow to parse (an alias bomb, nesting, a marker scan's worst case)
are refused at once or parsed off the event loop: while they are in flight, another
client's ``GET jobs`` keeps answering within 200 ms."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from jupyter_server.utils import url_path_join
from tornado.simple_httpclient import SimpleAsyncHTTPClient

from .pai import PAIClient

LATENCY = 0.2
HEAD = "protocolVersion: 2\nname: hostile\ntype: job\n"


def alias_bomb(levels: int = 9, fan: int = 6) -> str:
    """The review's bomb: 10 million values in 431 bytes (and no task role: never a job)."""
    lines = ['a0: &a0 ["lol"]'] + [
        f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * fan)}]" for i in range(1, levels + 1)
    ]
    return HEAD + "extras:\n" + "".join(f"  {line}\n" for line in lines)


def unclosed_markers() -> str:
    """A valid job whose command is 40 KB of ``<%``: quadratic for a backtracking scan."""
    return (
        HEAD + "prerequisites: [{name: img, type: dockerimage, uri: python}]\n"
        "taskRoles:\n  w:\n    dockerImage: img\n    commands: ['true # " + "<%" * 20_000 + "']\n"
    )


def many_distinct_markers() -> str:
    """A valid job near the size cap, each of its markers a warning: work to check."""
    line = "".join(f"<%a{i}%>" for i in range(100_000))
    return (
        HEAD + "prerequisites: [{name: img, type: dockerimage, uri: python}]\n"
        f"taskRoles:\n  w:\n    dockerImage: img\n    commands: ['true # {line}']\n"
    )


#: (path, body, content type, status, what the refusal names)
HOSTILE: list[tuple[str, str, str, int, str]] = [
    ("jobs", alias_bomb(), "text/yaml", 400, "values, aliases expanded"),
    ("convert", alias_bomb(), "text/yaml", 400, "values, aliases expanded"),
    ("jobs", "a: " + "[" * 500_000, "text/yaml", 400, "nest"),
    ("convert", "[" * 500_000, "application/json", 400, "nest"),
    ("convert", '{"name": "x", "gpus": ' + "9" * 100_000 + "}", "text/yaml", 400, "read"),
    ("convert", unclosed_markers(), "text/yaml", 200, ""),
    ("convert", many_distinct_markers(), "text/yaml", 200, ""),
]


async def test_hostile_documents_do_not_hold_up_another_clients_requests(
    pai: PAIClient, http_server_client: Any, jp_auth_header: dict[str, str], jp_base_url: str
) -> None:
    lister = SimpleAsyncHTTPClient(force_instance=True)
    url = http_server_client.get_url(url_path_join(jp_base_url, "pai/api/jobs"))
    latencies: list[float] = []
    posting = asyncio.Event()
    done = asyncio.Event()

    async def list_jobs() -> None:
        while not done.is_set():
            start = time.monotonic()
            r = await lister.fetch(url, headers=jp_auth_header, raise_error=False)
            if posting.is_set():
                latencies.append(time.monotonic() - start)
            assert r.code == 200, r
            await asyncio.sleep(0.01)

    listing = asyncio.create_task(list_jobs())
    try:
        await asyncio.sleep(0.3)  # the lister's connection is up and warm
        posting.set()
        started = time.monotonic()
        responses = await asyncio.gather(
            *(
                pai.request(
                    "POST",
                    path,
                    body=body,
                    headers={"Content-Type": ctype} if ctype else {},
                    request_timeout=120,
                )
                for path, body, ctype, _, _ in HOSTILE * 2
            )
        )
        in_flight = time.monotonic() - started
        await asyncio.sleep(0.1)
    finally:
        done.set()
        await listing
        lister.close()

    for (path, _, _, status, named), r in zip(HOSTILE * 2, responses, strict=True):
        assert r.code == status, (path, named, r)
        if status == 400:
            assert named in r.json()["errors"][0]["message"], r
    assert await pai.jobs() == []
    slowest = sorted(latencies)[-3:]
    assert len(latencies) >= 5, (len(latencies), in_flight)
    assert max(latencies) < LATENCY, (
        f"GET jobs took up to {max(latencies):.2f}s ({slowest}) in {len(latencies)} requests "
        f"while the documents were in flight ({in_flight:.2f}s)"
    )
