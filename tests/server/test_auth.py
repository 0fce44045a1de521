"""Every REST endpoint refuses a request without the server's token, and such a request
changes nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from jupyter_server.utils import url_path_join

from jupyter_pai.server.routes import PREFIX, ROUTES

from .pai import PAIClient, job_spec, wait_for_file

VERBS = ("get", "post", "delete")


def endpoints() -> list[tuple[str, str]]:
    """(route template, method) for every verb a handler defines."""
    found = []
    for template, handler in ROUTES:
        for verb in VERBS:
            if any(
                verb in vars(cls)
                for cls in handler.__mro__
                if cls.__module__.startswith("jupyter_pai")
            ):
                found.append((template, verb.upper()))
    return found


def test_the_route_table_is_what_the_design_lists() -> None:
    found = set(endpoints())
    for expected in [
        ("info", "GET"),
        ("images", "GET"),
        ("virtual-clusters", "GET"),
        ("jobs", "GET"),
        ("jobs", "POST"),
        ("jobs/{job_id}", "GET"),
        ("jobs/{job_id}", "DELETE"),
        ("jobs/{job_id}/logs", "GET"),
        ("jobs/{job_id}/events", "GET"),
        ("storage", "GET"),
        ("storage/{name}/{path}", "GET"),
    ]:
        assert expected in found, expected


async def test_every_endpoint_refuses_unauthenticated_requests(
    pai: PAIClient, http_server_client: Any, jp_base_url: str, storage_root: Path
) -> None:
    (storage_root / "hello.txt").write_text("hi")
    running = await pai.submit(
        job_spec("guarded", {"w": {"gpu": 1, "commands": [wait_for_file("go-guarded")]}})
    )
    await pai.wait_state(running["id"], "RUNNING")
    values = {
        "job_id": running["id"],
        "name": "work",
        "path": "hello.txt",
        "task": "w-0",
        "port": "1",
        "link": "not-a-link",
    }
    body = yaml.safe_dump(job_spec("intruder", {"w": {"commands": ["touch intruded"]}}))

    checked = []
    for template, method in endpoints():
        path = template.format(**values)
        url = url_path_join(jp_base_url, PREFIX, path)
        for headers in ({}, {"Authorization": "token not-the-token"}):
            kwargs: dict[str, Any] = {
                "method": method,
                "headers": dict(headers),
                "raise_error": False,
            }
            if method == "POST":
                kwargs["body"] = body
                kwargs["headers"]["Content-Type"] = "text/yaml"
            r = await http_server_client.fetch(url, **kwargs)
            assert r.code in (401, 403), (method, url, headers, r.code, r.body[:200])
            assert running["id"].encode() not in (r.body or b""), (method, url)
            checked.append((method, template))
    assert len(checked) >= 2 * 12

    # Nothing happened: no new job, the running one was not stopped.
    jobs = await pai.jobs()
    assert [j["id"] for j in jobs] == [running["id"]]
    assert jobs[0]["state"] == "RUNNING"
    assert pai.state_job_dirs() == [running["id"]]
    assert not (pai.root_dir / "intruded").exists()
    # The same requests with the token work (the refusals above were about the token).
    assert (await pai.request("GET", "storage", "work", "hello.txt")).body == b"hi"
    r = await pai.request("POST", "jobs", body=body, headers={"Content-Type": "text/yaml"})
    assert r.code == 201, r
    assert json.loads(r.body)["job"]["name"] == "intruder"
    pai.release("go-guarded")
    await pai.wait_state(running["id"], "SUCCEEDED")
