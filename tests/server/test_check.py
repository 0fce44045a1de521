"""``GET check`` on the local backend: jobs run on this machine, so there is nothing to
check on a cluster, and it says so (the Kubernetes answer is tests/kube/test_selfcheck.py)."""

from __future__ import annotations

from typing import Any

from jupyter_server.utils import url_path_join

from jupyter_pai.server.routes import PREFIX

from .pai import PAIClient
from .test_responses import check


async def test_the_local_backend_has_nothing_to_check(pai: PAIClient) -> None:
    r = await pai.request("GET", "check")
    assert r.code == 200, r
    body = r.json()
    check("/check", "get", 200, body)
    assert (body["backend"], body["ok"], body["missing"], body["reachability"]) == (
        "local",
        True,
        [],
        [],
    )
    assert body["note"] == "local backend: jobs run on this machine, nothing to check on a cluster"
    assert body["user"]


async def test_a_stranger_learns_nothing(http_server_client: Any, jp_base_url: str) -> None:
    url = url_path_join(jp_base_url, PREFIX, "check")
    r = await http_server_client.fetch(url, raise_error=False)
    assert r.code == 403, r.code
    assert b"local" not in (r.body or b"")
