"""Requests a browser session must not be tricked into, and bodies no client needs.

A browser is logged in by cookie; a page on another site can make it send that cookie but
cannot read or set this server's ``_xsrf`` cookie, so every mutating endpoint refuses a
cookie-authenticated request without the matching XSRF token (none, or another session's)
and does nothing. Bodies over the API's limit are a 413 naming the body, read no further."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import yaml
from jupyter_server.utils import url_path_join

from jupyter_pai.server.handlers.base import MAX_BODY_BYTES
from jupyter_pai.server.routes import PREFIX

from .pai import PAIClient, job_spec, wait_for_file


async def _login(client: Any, base_url: str, token: str) -> dict[str, str]:
    """A browser's login: the login form (which sets ``_xsrf``), posted with the token;
    the cookies it then holds."""
    jar: dict[str, str] = {}

    def keep(response: Any) -> None:
        for header in response.headers.get_list("Set-Cookie"):
            name, _, rest = header.partition("=")
            jar[name.strip()] = rest.split(";")[0]

    page = await client.fetch(url_path_join(base_url, "login"), raise_error=False)
    keep(page)
    body = f"password={token}&_xsrf={jar['_xsrf']}"
    answer = await client.fetch(
        url_path_join(base_url, "login"),
        method="POST",
        body=body,
        headers={"Cookie": _cookie(jar)},
        follow_redirects=False,
        raise_error=False,
    )
    keep(answer)
    assert any(name.startswith("username-") for name in jar), (answer.code, jar)
    return jar


def _cookie(jar: dict[str, str]) -> str:
    return "; ".join(f"{k}={v}" for k, v in jar.items())


async def test_mutations_by_cookie_need_the_sessions_own_xsrf_token(
    pai: PAIClient,
    http_server_client: Any,
    jp_base_url: str,
    jp_serverapp: Any,
    storage_root: Path,
) -> None:
    token = jp_serverapp.identity_provider.token
    running = await pai.submit(job_spec("kept", {"w": {"commands": [wait_for_file("go-kept")]}}))
    await pai.wait_state(running["id"], "RUNNING")
    mine = await _login(http_server_client, jp_base_url, token)
    other = await _login(http_server_client, jp_base_url, token)
    assert mine["_xsrf"] != other["_xsrf"]
    (storage_root / "nb.ipynb").write_text(
        json.dumps({"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
    )

    spec = yaml.safe_dump(job_spec("forged", {"w": {"commands": ["touch forged"]}}))
    mutations = [
        ("POST", "jobs", spec, "text/yaml"),
        ("POST", "convert", spec, "text/yaml"),
        ("DELETE", f"jobs/{running['id']}", None, None),
        ("POST", "notebook-jobs", json.dumps({"path": "nb.ipynb"}), "application/json"),
    ]
    for xsrf in (None, other["_xsrf"]):
        for method, path, body, content_type in mutations:
            headers = {"Cookie": _cookie(mine)}
            if content_type:
                headers["Content-Type"] = content_type
            if xsrf:
                headers["X-XSRFToken"] = xsrf
            r = await http_server_client.fetch(
                url_path_join(jp_base_url, PREFIX, path),
                method=method,
                body=body,
                headers=headers,
                raise_error=False,
                allow_nonstandard_methods=True,
            )
            assert r.code == 403, (method, path, xsrf is not None, r.code, r.body[:300])
            assert re.search(rb"xsrf", r.body or b"", re.I), r.body[:300]

    # Nothing happened.
    jobs = await pai.items("jobs")
    assert [j["id"] for j in jobs] == [running["id"]] and jobs[0]["state"] == "RUNNING"
    assert not (pai.root_dir / "forged").exists()
    # With its own token the same session may (the refusals were about the token).
    r = await http_server_client.fetch(
        url_path_join(jp_base_url, PREFIX, "jobs"),
        method="POST",
        body=spec,
        headers={
            "Cookie": _cookie(mine),
            "X-XSRFToken": mine["_xsrf"],
            "Content-Type": "text/yaml",
        },
        raise_error=False,
    )
    assert r.code == 201, r.body[:300]
    pai.release("go-kept")


async def test_a_body_over_the_limit_is_a_413_naming_it_and_nothing_is_made(
    pai: PAIClient,
) -> None:
    spec = job_spec("huge", {"w": {"commands": ["echo " + "x" * (MAX_BODY_BYTES + 10)]}})
    for path in ("jobs", "convert", "notebook-jobs"):
        r = await pai.request(
            "POST", path, body=json.dumps(spec), headers={"Content-Type": "application/json"}
        )
        assert r.code == 413, (path, r)
        body = r.json()
        assert f"at most {MAX_BODY_BYTES}" in body["message"], body
        assert body["errors"][0]["path"] == "body", body
    assert await pai.items("jobs") == []
    # Just under it is read as usual (here: a valid job, made).
    ok = job_spec("big", {"w": {"commands": ["echo " + "x" * (MAX_BODY_BYTES // 2)]}})
    r = await pai.request(
        "POST", "jobs", body=json.dumps(ok), headers={"Content-Type": "application/json"}
    )
    assert r.code == 201, r
