"""A task's web port through the Jupyter server (local backend): the task serves HTTP and
a WebSocket on its declared ``tensorboard`` port and the proxy reaches both, without
handing the task the user's credentials; bad tasks, ports, other users' jobs and ended
tasks are 4xx naming what is wrong."""

from __future__ import annotations

import asyncio
import gzip
import json
import logging
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from jupyter_server.utils import url_path_join

from jupyter_pai.backends.local.backend import LocalBackend
from jupyter_pai.server.portlinks import PortLinks
from jupyter_pai.server.routes import PREFIX
from jupyter_pai.server.sandbox import SANDBOX
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

    page = await pai.port_request("GET", *port_path(job_id, port, "/"))
    assert page.code == 200, page
    assert "Hello from task web-0" in page.text
    assert page.headers["Content-Type"].startswith("text/html")
    # The app's page may run its scripts: not the API's "default-src 'none'".
    assert "default-src 'none'" not in page.headers.get("Content-Security-Policy", "")

    # The task sees neither the token (header or argument) nor cookies; its own arguments pass.
    seen = await pai.port_request(
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

    echoed = await pai.port_request("POST", *port_path(job_id, port, "echo"), body=b"hello task")
    assert (echoed.code, echoed.text) == (200, "echo: hello task")

    # A redirect inside the app stays inside the proxy (under the port's link).
    moved = await pai.port_request("GET", *port_path(job_id, port, "go"))
    assert moved.code == 302, moved
    assert re.search(r"/pai/api/task-ports/[^/]+/whoami\?from=go$", moved.headers["Location"]), (
        moved.headers["Location"]
    )
    # The bare port URL goes on to its folder, where relative links resolve.
    bare = await unfollowed(pai, port_path(job_id, port))
    assert bare.code == 302 and bare.headers["Location"].endswith(f"/ports/{port}/"), bare

    ws = await jp_ws_fetch("pai", "api", *port_path(job_id, port, "ws"))
    for text in ("one", "two"):
        await ws.write_message(text)
        assert await ws.read_message() == f"echo: {text}"
    ws.close()


async def test_the_login_cookie_opens_no_port_from_another_site_and_pages_post_by_their_link(
    pai: PAIClient, http_server_client: Any, jp_base_url: str, jp_serverapp: Any
) -> None:
    """A browser tab holds the login cookie, not the token: a page of another site could
    post with it, so the port's proxy path wants the XSRF token and this server's origin.
    The app's own pages post to themselves through their link (sandboxed, they have no
    cookie): that needs neither."""
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
            url,
            method="POST",
            body=b"from a page",
            headers=headers,
            raise_error=False,
            follow_redirects=False,
        )

    forged = await post("http://evil.example")
    assert forged.code in (403, 404) and b"from a page" not in forged.body, forged
    without_xsrf = await post(f"http://{host}")
    assert without_xsrf.code == 403 and b"from a page" not in without_xsrf.body, without_xsrf

    assert login.code == 307, login
    link_echo = login.headers["Location"].split("?")[0]
    own = await http_server_client.fetch(
        link_echo,
        method="POST",
        body=b"from the app's page",
        headers={"Origin": "null"},
        raise_error=False,
        follow_redirects=False,
    )
    assert (own.code, own.body) == (200, b"echo: from the app's page"), own
    assert own.headers["Access-Control-Allow-Origin"] == "null"


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
    r = await pai.port_request("GET", *port_path(job["id"], port, "/"))
    assert r.code == 502, r
    assert f"does not answer on port {port}" in json.loads(r.body)["message"]


async def test_the_apps_answers_are_sandboxed_and_its_link_is_its_only_credential(
    pai: PAIClient,
    http_server_client: Any,
    jp_serverapp: Any,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Every answer of the app runs sandboxed in an opaque origin (its scripts cannot act
    as the user); the link names one port of one job, cannot be altered, ends with the
    server's run, and is never written to the server's log; a referrer from outside the
    app (JupyterLab's URL, with its ``?token=``) does not reach the task."""
    caplog.set_level(logging.DEBUG)
    job_id, port = await running_web_task(pai, "sandboxed")
    token = jp_serverapp.identity_provider.token
    first = await unfollowed(pai, port_path(job_id, port, "whoami"))
    assert first.code == 307, first
    assert first.headers["Cache-Control"] == "no-store"
    assert first.headers["Referrer-Policy"] == "no-referrer"
    link_base = first.headers["Location"].rsplit("/", 1)[0] + "/"
    link = link_base.rstrip("/").rsplit("/", 1)[1]

    async def via_link(path: str, **kwargs: Any) -> Any:
        kwargs.setdefault("raise_error", False)
        kwargs.setdefault("follow_redirects", False)
        return await http_server_client.fetch(link_base + path, **kwargs)

    # Every page loads the proxy's stand-ins for what an opaque origin lacks, first.
    page = await via_link("", headers={"Accept": "text/html,*/*"})
    script = f'<script src="{link_base}__jupyter_pai__/sandbox.js"></script>'
    assert f"<head>{script}<title>" in page.body.decode(), page.body[:300]
    stand_ins = await via_link("__jupyter_pai__/sandbox.js")
    assert stand_ins.headers["Content-Type"].startswith("text/javascript"), stand_ins.body
    assert b"localStorage" in stand_ins.body

    answers = [await via_link(p) for p in ("", "whoami", "go", "no-such-page")]
    assert [a.code for a in answers] == [200, 200, 302, 404], answers
    for answer in answers:
        policy = answer.headers.get_list("Content-Security-Policy")
        assert any(p.startswith("sandbox ") for p in policy), policy
        assert "allow-same-origin" not in " ".join(policy), policy
        assert "allow-top-navigation" not in " ".join(policy), policy
        assert "Set-Cookie" not in answer.headers

    outside = f"http://{first.effective_url.split('/')[2]}/lab?token={token}"
    seen = (await via_link("whoami", headers={"Referer": outside})).body.decode()
    assert token not in seen
    assert "referer" not in {n.lower() for n in json.loads(seen)["headers"]}, seen
    inside = await via_link("whoami", headers={"Referer": link_base + "page?a=1"})
    assert json.loads(inside.body)["headers"]["Referer"] == f"http://127.0.0.1:{port}/page?a=1"

    preflight = await via_link(
        "echo",
        method="OPTIONS",
        headers={
            "Origin": "null",
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "content-type",
        },
    )
    assert preflight.code == 204, preflight
    assert preflight.headers["Access-Control-Allow-Origin"] == "null"
    assert preflight.headers["Access-Control-Allow-Headers"] == "content-type"

    tampered = await http_server_client.fetch(
        link_base.replace(link, link[:-2] + ("AA" if link[-2:] != "AA" else "BB")),
        raise_error=False,
    )
    assert tampered.code == 403 and "not valid" in json.loads(tampered.body)["message"]
    # A link opens its own port only: the task's other ports need their own.
    pai_context = jp_serverapp.web_app.settings["jupyter_pai"]
    pai_context.port_links = PortLinks()  # as after a restart of the server
    restarted = await via_link("whoami")
    assert restarted.code == 403 and "restarted" in json.loads(restarted.body)["message"]

    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "task-ports/" in logged  # the requests were logged ...
    assert link not in logged  # ... without their link


async def test_only_headers_about_the_answer_itself_reach_the_browser(
    pai: PAIClient, http_server_client: Any
) -> None:
    """The app answers on the Jupyter origin: a header that acts on the whole origin
    (reports of every URL for a year, cleared storage, HSTS, a service worker's scope,
    cookies, CORS …) would act on Jupyter's own pages. Only what describes the one answer
    passes; the app's own policy stays beside the sandbox, which it cannot loosen."""
    job_id, port = await running_web_task(pai, "loud")
    first = await unfollowed(pai, port_path(job_id, port, "loud"))
    assert first.code == 307, first
    loud = await http_server_client.fetch(
        first.headers["Location"],
        headers={"Origin": "null"},
        decompress_response=False,
        raise_error=False,
    )
    assert loud.code == 200, loud
    # None of them arrives, but for those this server sets itself, with its values only.
    ours = {
        "access-control-allow-origin": "null",  # a sandboxed page's fetch of its own app
        "access-control-allow-credentials": "true",
        "x-content-type-options": "nosniff",
        "referrer-policy": "no-referrer",
    }
    arrived = {name.lower() for name in loud.headers}
    leaked = [name for name, _ in taskweb.DROPPED_HEADERS if name.lower() in arrived - set(ours)]
    assert not leaked, leaked
    assert {n: loud.headers.get_list(n) for n in ours} == {n: [v] for n, v in ours.items()}
    for name, value in taskweb.PASSED_HEADERS:
        if name != "Vary":
            assert loud.headers.get_list(name) == [value], (name, loud.headers.get_list(name))
    assert set(loud.headers.get_list("Vary")) == {"Origin", "Accept-Encoding"}, loud.headers
    assert loud.headers.get_list("Content-Security-Policy") == [SANDBOX, taskweb.OWN_POLICY[1]]
    assert gzip.decompress(loud.body) == taskweb.LOUD_BODY


STRANGER = """
import sys
from http.server import BaseHTTPRequestHandler, HTTPServer

class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        print("asked", self.path, flush=True)
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"a stranger's page")

server = HTTPServer(("127.0.0.1", int(sys.argv[1])), Handler)
print("listening", flush=True)
server.serve_forever()
"""


async def test_a_port_another_program_took_is_never_proxied_to(pai: PAIClient) -> None:
    """The task's port is free until its app listens; another program of this machine
    (another user's, say) may take it first. The proxy then says so and sends nothing
    there, rather than hand the user's request to a stranger."""
    quiet = job_spec("taken", {"web": {"ports": {"tensorboard": 1}, "commands": ["sleep 60"]}})
    job = await pai.submit(quiet)
    await pai.wait_state(job["id"], "RUNNING")

    async def running_task() -> dict[str, Any] | None:
        # The job runs once admitted; its task's process starts a moment later.
        task: dict[str, Any] = (await pai.job(job["id"]))["tasks"][0]
        return task if task["state"] == "RUNNING" else None

    task = await pai.wait_for(running_task, "task web-0 to run", job_id=job["id"])
    port = task["ports"]["tensorboard"][0]
    stranger = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        STRANGER,
        str(port),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    try:
        assert stranger.stdout is not None
        assert (await asyncio.wait_for(stranger.stdout.readline(), 10)).strip() == b"listening"
        r = await pai.port_request("GET", *port_path(job["id"], port, "/"))
        assert r.code == 502, r
        message = r.json()["message"]
        assert f"port {port}" in message and "not task web-0" in message, message
        assert "stranger" not in r.text
    finally:
        stranger.terminate()
        out, _ = await stranger.communicate()
    assert b"asked" not in out, out
    await pai.stop(job["id"])
