"""``GET jobs`` in pages (``limit``, ``continue``, ``total``, newest first) and with
conditional requests (``ETag`` / ``If-None-Match`` → 304), through a real server."""

from __future__ import annotations

import asyncio
import base64
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from jupyter_pai import Client
from jupyter_pai.backends.local.records import JobRecord
from jupyter_pai.backends.local.store import StateStore
from jupyter_pai.backends.models import JobState

from .pai import PAIClient, job_spec, wait_for_file

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)


def seed(state_dir: Path, n: int, *, start: int = 0) -> list[str]:
    """``n`` ended jobs written as the store writes them (no process runs), one a minute,
    users alice and bob in turn; ids newest first."""
    store = StateStore(state_dir)
    ids = []
    for i in range(start, start + n):
        user = "alice" if i % 2 == 0 else "bob"
        rec = JobRecord(
            id=f"{user}~seeded-{i:03d}",
            name=f"seeded-{i:03d}",
            user=user,
            virtual_cluster="default",
            state=JobState.SUCCEEDED,
            submission_time=T0 + timedelta(minutes=i),
            working_dir=str(state_dir),
        )
        store.create_job(rec, {"name": rec.name})
        ids.append(rec.id)
    return ids[::-1]


async def page(pai: PAIClient, **params: Any) -> dict[str, Any]:
    r = await pai.request("GET", "jobs", params=params)
    assert r.code == 200, r
    body: dict[str, Any] = r.json()
    return body


async def all_pages(pai: PAIClient, **params: Any) -> tuple[list[str], list[int]]:
    ids: list[str] = []
    sizes = []
    token = params.pop("continue", None)
    while True:
        body = await page(pai, **params, **({"continue": token} if token else {}))
        ids += [j["id"] for j in body["items"]]
        sizes.append(len(body["items"]))
        token = body["continue"]
        if token is None:
            return ids, sizes


async def test_pages_come_newest_first_with_the_total_and_a_token_for_the_next(
    pai: PAIClient, pai_state_dir: Path
) -> None:
    newest_first = seed(pai_state_dir, 7)

    whole = await page(pai)
    assert [j["id"] for j in whole["items"]] == newest_first
    assert whole["total"] == 7 and whole["continue"] is None

    first = await page(pai, limit=3)
    assert [j["id"] for j in first["items"]] == newest_first[:3]
    assert first["total"] == 7 and isinstance(first["continue"], str)

    ids, sizes = await all_pages(pai, limit=3)
    assert ids == newest_first and sizes == [3, 3, 1]

    # Filters hold across pages, and the total counts what they match.
    alice = [i for i in newest_first if i.startswith("alice~")]
    body = await page(pai, user="alice", limit=2)
    assert body["total"] == len(alice) == 4
    assert (await all_pages(pai, user="alice", limit=2))[0] == alice


async def test_a_job_submitted_while_paging_shifts_no_later_page(
    pai: PAIClient, pai_state_dir: Path
) -> None:
    newest_first = seed(pai_state_dir, 6)
    first = await page(pai, limit=2)
    seed(pai_state_dir, 2, start=10)  # newer than everything: they come before the cursor
    rest, _ = await all_pages(pai, limit=2, **{"continue": first["continue"]})
    assert [j["id"] for j in first["items"]] + rest == newest_first
    assert (await page(pai, limit=1))["total"] == 8


async def test_a_bad_limit_or_continue_is_a_400_naming_the_field(
    pai: PAIClient, pai_state_dir: Path
) -> None:
    seed(pai_state_dir, 2)
    not_a_list = base64.urlsafe_b64encode(b'{"a": 1}').decode()
    for params, field in [
        ({"limit": "0"}, "limit"),
        ({"limit": "1001"}, "limit"),
        ({"limit": "ten"}, "limit"),
        ({"limit": "-5"}, "limit"),
        ({"continue": "not a token!"}, "continue"),
        ({"continue": not_a_list}, "continue"),
        ({"continue": base64.urlsafe_b64encode(b'["yesterday", "x"]').decode()}, "continue"),
    ]:
        r = await pai.request("GET", "jobs", params=params)
        assert r.code == 400, (params, r)
        assert [e["path"] for e in r.json()["errors"]] == [field], (params, r)


async def conditional(pai: PAIClient, etag: str, **params: Any) -> Any:
    return await pai.request("GET", "jobs", headers={"If-None-Match": etag}, params=params)


async def test_an_unchanged_list_is_a_304_and_a_state_change_changes_the_etag(
    pai: PAIClient, pai_state_dir: Path
) -> None:
    seed(pai_state_dir, 3)
    job = await pai.submit(job_spec("tagged", {"w": {"commands": [wait_for_file("go-tag")]}}))
    running = await pai.wait_state(job["id"], "RUNNING")
    assert running["state"] == "RUNNING"

    r = await pai.request("GET", "jobs")
    etag = r.headers["ETag"]
    assert r.code == 200 and etag.startswith('"'), r

    again = await conditional(pai, etag)
    assert again.code == 304 and again.body == b"", again
    assert again.headers["ETag"] == etag

    # The tag depends on the query: another page or filter is another answer.
    for params in ({"limit": "1"}, {"user": "alice"}, {"state": "RUNNING"}):
        other = await pai.request("GET", "jobs", params=params)
        assert other.code == 200 and other.headers["ETag"] != etag, params
        assert (await conditional(pai, other.headers["ETag"], **params)).code == 304

    pai.release("go-tag")
    await pai.wait_state(job["id"], "SUCCEEDED")
    changed = await conditional(pai, etag)
    assert changed.code == 200 and changed.headers["ETag"] != etag, changed
    states = {j["id"]: j["state"] for j in changed.json()["items"]}
    assert states[job["id"]] == "SUCCEEDED"


async def test_a_record_written_by_another_process_changes_the_etag(
    pai: PAIClient, pai_state_dir: Path
) -> None:
    [newest, *_] = seed(pai_state_dir, 3)
    r = await pai.request("GET", "jobs")
    assert (await conditional(pai, r.headers["ETag"])).code == 304

    # As a supervisor or the CLI would: another StateStore on the same directory.
    store = StateStore(pai_state_dir)
    rec = store.read_job(newest)
    rec.retries = 2
    store.write_job(rec)
    changed = await conditional(pai, r.headers["ETag"])
    assert changed.code == 200, changed
    assert {j["id"]: j["retries"] for j in changed.json()["items"]}[newest] == 2

    store.delete_job(newest)
    gone = await conditional(pai, changed.headers["ETag"])
    assert gone.code == 200 and newest not in {j["id"] for j in gone.json()["items"]}


async def test_the_python_client_pages_through_every_job(
    pai: PAIClient,
    pai_state_dir: Path,
    jp_serverapp: Any,
    http_server_client: Any,
    jp_http_port: int,
    jp_base_url: str,
) -> None:
    newest_first = seed(pai_state_dir, 7)
    client = Client(
        url=f"http://127.0.0.1:{jp_http_port}{jp_base_url}",
        token=jp_serverapp.identity_provider.token,
    )
    connection: Any = client._connection
    connection.page_size = 3
    asked: list[dict[str, Any]] = []
    read = connection.read

    async def counting(model: Any, method: str, path: str, **kwargs: Any) -> Any:
        asked.append(dict(kwargs.get("params") or {}))
        return await read(model, method, path, **kwargs)

    connection.read = counting
    try:
        listed = await asyncio.to_thread(client.jobs)
        assert [j.id for j in listed] == newest_first
        assert len(asked) == 3 and all(p["limit"] == 3 for p in asked), asked
        alice = await asyncio.to_thread(lambda: client.jobs(user="alice"))
        assert [j.id for j in alice] == [i for i in newest_first if i.startswith("alice~")]
    finally:
        await asyncio.to_thread(client.close)
