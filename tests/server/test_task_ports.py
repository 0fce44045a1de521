"""A task's web port through the Jupyter server (local backend): the task serves HTTP and
a WebSocket on its declared ``tensorboard`` port and the proxy reaches both, without
handing the task the user's credentials; bad tasks, ports, other users' jobs and ended
tasks are 4xx naming what is wrong."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from jupyter_server.utils import url_path_join

from jupyter_pai.backends.local.backend import LocalBackend
from jupyter_pai.server.routes import PREFIX
from jupyter_pai.spec import parse_job
from tests import taskweb

from .pai import API, PY, PAIClient, job_spec


def web_job(name: str) -> dict[str, Any]:
    return job_spec(name, {"web": {"ports": {"tensorboard": 1}, "commands": [taskweb.command(PY)]}})


async def running_web_task(pai: PAIClient, name: str) -> tuple[str, int]:
    job = await pai.submit(web_job(name))
    await pai.wait_state(job["id"], "RUNNING")
    await pai.wait_log(job["id"], "serving on port", "web")
    detail = await pai.job(job["id"])
    port: int = detail["tasks"][0]["ports"]["tensorboard"][0]
    return job["id"], port


async def unfollowed(pai: PAIClient, path: tuple[str, ...]) -> Any:
    return await pai.fetch(*API, *path, raise_error=False, follow_redirects=False)


def port_path(job_id: str, port: int | str, *rest: str, task: str = "web-0") -> tuple[str, ...]:
    return ("jobs", job_id, "tasks", task, "ports", str(port), *rest)


async def test_http_and_websocket_reach_the_tasks_port(
    pai: PAIClient, jp_ws_fetch: Any, jp_serverapp: Any
) -> None:
    job_id, port = await running_web_task(pai, "board")

    page = await pai.request("GET", *port_path(job_id, port, "/"))
    assert page.code == 200, page
    assert "Hello from task web-0" in page.text
    assert page.headers["Content-Type"].startswith("text/html")
    # The app's page may run its scripts: not the API's "default-src 'none'".
    assert "default-src 'none'" not in page.headers.get("Content-Security-Policy", "")

    # The task sees neither the token (header or argument) nor cookies; its own arguments pass.
    seen = await pai.request(
        "GET",
        *port_path(job_id, port, "whoami"),
        params={"x": "1", "token": jp_serverapp.identity_provider.token},
        headers={"Cookie": "username-x=secret"},
    )
    assert seen.code == 200, seen
    received = seen.json()
    assert received["query"] == "x=1"
    names = {n.lower() for n in received["headers"]}
    assert not names & {"authorization", "cookie"}, received["headers"]
    assert jp_serverapp.identity_provider.token not in seen.text

    echoed = await pai.request("POST", *port_path(job_id, port, "echo"), body=b"hello task")
    assert (echoed.code, echoed.text) == (200, "echo: hello task")

    # A redirect inside the app stays inside the proxy.
    moved = await unfollowed(pai, port_path(job_id, port, "go"))
    assert moved.code == 302, moved
    assert moved.headers["Location"].endswith(
        f"/pai/api/jobs/{job_id}/tasks/web-0/ports/{port}/whoami?from=go"
    ), moved.headers["Location"]
    # The bare port URL goes on to its folder, where relative links resolve.
    bare = await unfollowed(pai, port_path(job_id, port))
    assert bare.code == 302 and bare.headers["Location"].endswith(f"/ports/{port}/"), bare

    ws = await jp_ws_fetch("pai", "api", *port_path(job_id, port, "ws"))
    for text in ("one", "two"):
        await ws.write_message(text)
        assert await ws.read_message() == f"echo: {text}"
    ws.close()


async def test_cookie_sessions_post_only_from_this_origin(
    pai: PAIClient, http_server_client: Any, jp_base_url: str, jp_serverapp: Any
) -> None:
    """A browser tab holds the login cookie, not the token: a page of another site could
    post with it, so a post needs the XSRF token or this server's own origin."""
    job_id, port = await running_web_task(pai, "session")
    url = url_path_join(jp_base_url, PREFIX, *port_path(job_id, port, "echo"))
    token = jp_serverapp.identity_provider.token
    login = await http_server_client.fetch(
        f"{url}?token={token}", raise_error=False, follow_redirects=False
    )
    cookies = [c.split(";")[0] for c in login.headers.get_list("Set-Cookie")]
    session = [c for c in cookies if c.startswith("username-")]
    assert session, login.headers
    host = login.effective_url.split("/")[2]

    async def post(origin: str) -> Any:
        headers = {"Cookie": "; ".join(session), "Origin": origin}
        return await http_server_client.fetch(
            url, method="POST", body=b"from a page", headers=headers, raise_error=False
        )

    forged = await post("http://evil.example")
    assert forged.code in (403, 404) and b"from a page" not in forged.body, forged
    same = await post(f"http://{host}")
    assert (same.code, same.body) == (200, b"echo: from a page")


async def test_bad_tasks_ports_and_other_users_jobs_are_refused(
    pai: PAIClient, pai_state_dir: Path
) -> None:
    job_id, port = await running_web_task(pai, "guarded")
    cases = {
        port_path(job_id, port, "/", task="ps-0"): (404, "task"),
        port_path(job_id, port, "/", task="web"): (400, "task"),
        port_path(job_id, port + 1, "/"): (404, "port"),
        port_path(job_id, "http", "/"): (400, "port"),
        port_path("nobody~nothing", port, "/"): (404, None),
    }
    for path, (code, field) in cases.items():
        r = await pai.request("GET", *path)
        assert r.code == code, (path, r)
        body = r.json()
        assert body["message"], body
        if field is not None:
            assert [e["path"] for e in body["errors"]] == [field], body

    # bob's running job on the same machine: alice's server may not open its ports.
    bob = LocalBackend(user="bob", state_dir=str(pai_state_dir))
    await bob.start()
    try:
        theirs = await bob.submit(parse_job(web_job("theirs")).job, working_dir=str(pai.root_dir))
        await pai.wait_state(theirs.id, "RUNNING")
        r = await pai.request("GET", *port_path(theirs.id, port, "/"))
        assert r.code == 403 and "bob" in r.json()["message"], r
        await bob.stop_job(theirs.id)
    finally:
        await bob.close()

    # Once the task has ended its port is no longer proxied.
    await pai.stop(job_id)
    await pai.wait_state(job_id, "STOPPED")
    r = await pai.request("GET", *port_path(job_id, port, "/"))
    assert r.code == 409 and "STOPPED" in r.json()["message"], r


async def test_a_task_not_listening_yet_is_a_502_naming_it(pai: PAIClient) -> None:
    quiet = job_spec("quiet", {"web": {"ports": {"tensorboard": 1}, "commands": ["sleep 60"]}})
    job = await pai.submit(quiet)
    await pai.wait_state(job["id"], "RUNNING")

    async def started() -> dict[str, Any] | None:
        task: dict[str, Any] = (await pai.job(job["id"]))["tasks"][0]
        return task if task["state"] == "RUNNING" else None

    task = await pai.wait_for(started, "the task to run")
    port = task["ports"]["tensorboard"][0]
    r = await pai.request("GET", *port_path(job["id"], port, "/"))
    assert r.code == 502, r
    assert f"does not answer on port {port}" in json.loads(r.body)["message"]
