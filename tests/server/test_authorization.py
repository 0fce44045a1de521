"""Every REST verb asks the server's Authorizer about resource ``pai``: reads with ``read``,
anything that submits, stops or runs code with ``write`` (or ``execute`` for a task's web
port), so a deployment that lets some users only read keeps them from running code."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from jupyter_server.auth.authorizer import Authorizer
from jupyter_server.auth.decorator import authorized
from tornado import web

from jupyter_pai.server.routes import ROUTES
from jupyter_pai.spec import parse_job

from .pai import PAIClient, job_spec, wait_for_file

#: The code of the check jupyter_server's ``authorized`` wraps a verb in; its closure holds
#: the action.
_CHECK: Any = authorized("read")(lambda self: None).__code__
VERBS = [m.lower() for m in web.RequestHandler.SUPPORTED_METHODS]
#: Handlers whose verbs authenticate by a signed link instead of the user's credentials:
#: the link is made only after the user was authorized to ``execute`` the port.
SIGNED_LINK = {"TaskPortLinkHandler"}


class ReadOnly(Authorizer):
    """A user who may look at everything and change nothing."""

    def is_authorized(self, handler: Any, user: Any, action: str, resource: str) -> bool:
        return action == "read"


@pytest.fixture
def pai_extra_config() -> dict[str, Any]:
    return {"ServerApp": {"authorizer_class": ReadOnly}}


def checked_action(method: Callable[..., Any]) -> str | None:
    """The action ``authorized`` asks about for ``method``, through other decorators."""
    fn: Any = method
    while fn is not None:
        if getattr(fn, "__code__", None) is _CHECK:
            cells = dict(zip(fn.__code__.co_freevars, fn.__closure__, strict=True))
            action: str = cells["action"].cell_contents
            return action
        fn = getattr(fn, "__wrapped__", None)
    return None


def verbs(handler: type[web.RequestHandler]) -> list[str]:
    """The verbs a jupyter_pai class of ``handler`` defines (not tornado's or Jupyter's)."""
    return [
        verb
        for verb in VERBS
        if any(verb in vars(c) for c in handler.__mro__ if c.__module__.startswith("jupyter_pai"))
    ]


def expected_action(template: str, verb: str) -> str:
    if "/ports/" in template:
        return "execute"  # a task's web app can run code
    return "read" if verb in ("get", "head") else "write"


def test_every_verb_of_every_route_is_authorized_with_its_action() -> None:
    unchecked = []
    for template, handler in ROUTES:
        assert handler.auth_resource == "pai", handler
        for verb in verbs(handler):
            method = getattr(handler, verb)
            if handler.__name__ in SIGNED_LINK and getattr(
                method, "__allow_unauthenticated", False
            ):
                continue
            action = checked_action(method)
            if action != expected_action(template, verb):
                unchecked.append(f"{verb.upper()} {template} ({handler.__name__}): {action}")
    assert unchecked == []


async def test_a_read_only_user_can_look_but_not_submit_stop_convert_or_open_ports(
    pai: PAIClient, jp_serverapp: Any
) -> None:
    for path in ("jobs", "virtual-clusters", "storage", "info", "images"):
        r = await pai.request("GET", path)
        assert r.code == 200, (path, r)

    # A running job, started behind the API's back: the user may see it, not stop it.
    backend = await jp_serverapp.web_app.settings["jupyter_pai"].backend()
    spec = job_spec("watched", {"w": {"commands": [wait_for_file("go-watched")]}})
    job = await backend.submit(parse_job(spec).job, working_dir=str(pai.root_dir))
    try:
        assert (await pai.job(job.id))["id"] == job.id
        body = "name: intruder\ncommand: touch intruded\n"
        refused = {
            "submit": await pai.request(
                "POST", "jobs", body=body, headers={"Content-Type": "text/yaml"}
            ),
            "stop": await pai.request("DELETE", "jobs", job.id),
            "convert": await pai.request(
                "POST", "convert", body=body, headers={"Content-Type": "text/yaml"}
            ),
            "notebook-jobs": await pai.request(
                "POST",
                "notebook-jobs",
                body='{"path": "nb.ipynb"}',
                headers={"Content-Type": "application/json"},
            ),
            "port proxy": await pai.request(
                "GET", "jobs", job.id, "tasks", "w-0", "ports", "http", ""
            ),
        }
        assert {what: r.code for what, r in refused.items()} == dict.fromkeys(refused, 403)
        assert refused["submit"].json()["message"] == (
            "User is not authorized to write on resource: pai."
        )
        assert [j["id"] for j in await pai.jobs()] == [job.id]
        assert (await pai.job(job.id))["state"] in ("WAITING", "RUNNING")
        assert not (pai.root_dir / "intruded").exists()
    finally:
        await backend.stop_job(job.id)
