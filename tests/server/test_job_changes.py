"""``GET job-changes``: server-sent events of job changes through a real server — a new
job, its state changes and its deletion reach an open stream; filters, timeout and
authentication hold."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from jupyter_server.utils import url_path_join

from jupyter_pai.backends.local.store import StateStore

from .pai import PAIClient, job_spec, wait_for_file
from .sse import EventStream


async def open_stream(
    port: int, base_url: str, headers: dict[str, str], query: str = ""
) -> EventStream:
    path = url_path_join(base_url, "pai/api/job-changes") + (f"?{query}" if query else "")
    return await EventStream.open(port, path, headers)


def about(job_id: str, kind: str, state: str | None = None) -> Any:
    """Matches an event of ``kind`` about the job, in ``state`` if given."""

    def check(name: str, data: Any) -> bool:
        return (
            name == kind
            and data["type"] == name
            and data["job"]["id"] == job_id
            and (state is None or data["job"]["state"] == state)
        )

    return check


async def test_a_stream_tells_of_a_new_job_its_state_changes_and_its_deletion(
    pai: PAIClient,
    pai_state_dir: Path,
    jp_http_port: int,
    jp_base_url: str,
    jp_auth_header: dict[str, str],
) -> None:
    stream = await open_stream(jp_http_port, jp_base_url, jp_auth_header)
    other = await open_stream(jp_http_port, jp_base_url, jp_auth_header, "user=somebody-else")
    try:
        assert stream.status == 200, stream.headers
        assert stream.headers["content-type"].startswith("text/event-stream")
        assert await stream.next() == ("ready", {})
        assert await other.next() == ("ready", {})

        job = await pai.submit(job_spec("streamed", {"w": {"commands": [wait_for_file("go-s")]}}))
        added = await stream.until("added", about(job["id"], "added"))
        assert added[1]["job"]["name"] == "streamed"
        # Admitted at once or a moment later: RUNNING in the first event or a change.
        if added[1]["job"]["state"] != "RUNNING":
            await stream.until("RUNNING", about(job["id"], "modified", "RUNNING"))
        pai.release("go-s")
        done = await stream.until("SUCCEEDED", about(job["id"], "modified", "SUCCEEDED"))
        assert done[1]["job"]["exitCode"] == 0

        # Removed from the store (as a remote kernel's job is at shutdown).
        StateStore(pai_state_dir).delete_job(job["id"])
        await stream.until("deleted", about(job["id"], "deleted"))

        # The same stream goes on for the next job; the filtered one saw none of them.
        second = await pai.submit(job_spec("streamed-2", {"w": {"commands": ["true"]}}))
        added = await stream.until("added 2", about(second["id"], "added"))
        await pai.wait_state(second["id"], "SUCCEEDED")
        if added[1]["job"]["state"] != "SUCCEEDED":  # a quick job may end before the hub looks
            await stream.until("SUCCEEDED 2", about(second["id"], "modified", "SUCCEEDED"))
        assert other.events == [("ready", {})]
    finally:
        await stream.close()
        await other.close()


async def test_a_stream_ends_after_its_timeout(
    pai: PAIClient, jp_http_port: int, jp_base_url: str, jp_auth_header: dict[str, str]
) -> None:
    stream = await open_stream(jp_http_port, jp_base_url, jp_auth_header, "timeout=0.5")
    try:
        assert await stream.next() == ("ready", {})
        ended = False
        try:
            await stream.until("end", lambda *_: False, timeout=10)
        except EOFError:
            ended = True
        assert ended
    finally:
        await stream.close()


async def test_a_stream_needs_the_token_and_a_valid_timeout(
    pai: PAIClient, jp_http_port: int, jp_base_url: str, jp_auth_header: dict[str, str]
) -> None:
    for headers in ({}, {"Authorization": "token not-the-token"}):
        stream = await open_stream(jp_http_port, jp_base_url, headers)
        try:
            assert stream.status == 403, stream.headers
        finally:
            await stream.close()
    for bad in ("0", "-1", "soon", "100000"):
        r = await pai.request("GET", "job-changes", params={"timeout": bad})
        assert r.code == 400, r
        assert [e["path"] for e in r.json()["errors"]] == ["timeout"], r
