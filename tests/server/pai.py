"""A small client for the REST API under test, and job-spec helpers.

Polling helpers wait for an outcome with a deadline (never a fixed sleep) and, when the
deadline passes, fail with what the job looked like and its events.
"""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import yaml

API = ("pai", "api")
TERMINAL = ("SUCCEEDED", "FAILED", "STOPPED")
PY = shlex.quote(sys.executable)
T = TypeVar("T")


class Response:
    def __init__(self, code: int, headers: Any, body: bytes) -> None:
        self.code = code
        self.headers = headers
        self.body = body

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", errors="replace")

    def json(self) -> Any:
        ctype = self.headers.get("Content-Type", "")
        assert ctype.startswith("application/json"), f"{self.code} {ctype}: {self.text[:500]}"
        return json.loads(self.body)

    def __repr__(self) -> str:
        return f"<Response {self.code} {self.text[:300]!r}>"


class PAIClient:
    def __init__(self, fetch: Any, root_dir: Path, state_dir: Path, http: Any = None) -> None:
        self.fetch = fetch
        self.root_dir = root_dir  # the server's root: tasks run here
        self.state_dir = state_dir
        self.http = http  # the server's own HTTP client: requests without credentials

    # -- raw requests --------------------------------------------------------------------

    async def request(
        self,
        method: str,
        *path: str,
        body: str | bytes | None = None,
        headers: dict[str, str] | None = None,
        params: dict[str, Any] | None = None,
        request_timeout: float = 30,
    ) -> Response:
        kwargs: dict[str, Any] = {}
        if body is not None:
            kwargs["body"] = body
        elif method in ("POST", "PUT", "PATCH"):
            kwargs["body"] = b""
        r = await self.fetch(
            *API,
            *path,
            method=method,
            headers=headers or {},
            params={k: str(v) for k, v in (params or {}).items()},
            raise_error=False,
            request_timeout=request_timeout,
            **kwargs,
        )
        return Response(r.code, r.headers, r.body or b"")

    async def port_request(
        self,
        method: str,
        *path: str,
        body: bytes | None = None,
        headers: dict[str, str] | None = None,
        params: dict[str, Any] | None = None,
    ) -> Response:
        """A request to a task's port as a browser tab makes it: to the port's proxy path
        with the user's credentials, which answers with the port's signed link (a 307),
        then to that link with none (the credential is the link)."""
        if body is None and method in ("POST", "PUT", "PATCH"):
            body = b""
        first = await self.fetch(
            *API,
            *path,
            method=method,
            headers=dict(headers or {}),
            params={k: str(v) for k, v in (params or {}).items()},
            body=body,
            raise_error=False,
            follow_redirects=False,
        )
        if first.code != 307:
            return Response(first.code, first.headers, first.body or b"")
        location = first.headers["Location"]
        assert "/pai/api/task-ports/" in location and "token=" not in location, location
        assert self.http is not None, "PAIClient(http=http_server_client) for port requests"
        r = await self.http.fetch(
            location,
            method=method,
            headers=dict(headers or {}),
            body=body,
            raise_error=False,
            follow_redirects=False,
            allow_nonstandard_methods=True,
        )
        return Response(r.code, r.headers, r.body or b"")

    async def get(self, *path: str, **params: Any) -> Any:
        r = await self.request("GET", *path, params=params)
        assert r.code == 200, r
        return r.json()

    async def items(self, *path: str, **params: Any) -> list[dict[str, Any]]:
        """A list endpoint's items, read from the one envelope every list comes in."""
        body = await self.get(*path, **params)
        # The envelope: items, and for a paged list its total and next page's token.
        assert next(iter(body)) == "items" and set(body) <= {"items", "total", "continue"}, body
        items: list[dict[str, Any]] = body["items"]
        return items

    # -- jobs ------------------------------------------------------------------------------

    async def post_job(
        self, spec: str | dict[str, Any], content_type: str = "text/yaml"
    ) -> Response:
        text = spec if isinstance(spec, str) else yaml.safe_dump(spec, sort_keys=False)
        return await self.request("POST", "jobs", body=text, headers={"Content-Type": content_type})

    async def submit(self, spec: str | dict[str, Any]) -> dict[str, Any]:
        """The created job (the ``job`` of the ``SubmitResult``)."""
        r = await self.post_job(spec)
        assert r.code == 201, r
        job: dict[str, Any] = r.json()["job"]
        return job

    async def job(self, job_id: str) -> dict[str, Any]:
        job: dict[str, Any] = await self.get("jobs", job_id)
        return job

    async def jobs(self, **params: Any) -> list[dict[str, Any]]:
        return await self.items("jobs", **params)

    async def events(self, job_id: str) -> list[dict[str, Any]]:
        return await self.items("jobs", job_id, "events")

    async def stop(self, job_id: str) -> dict[str, Any]:
        r = await self.request("DELETE", "jobs", job_id)
        assert r.code == 200, r
        job: dict[str, Any] = r.json()
        return job

    async def log_response(
        self, job_id: str, role: str | None = None, index: int = 0, **params: Any
    ) -> Response:
        if role is not None:
            params["role"] = role
        params["index"] = index
        return await self.request("GET", "jobs", job_id, "logs", params=params)

    async def log(self, job_id: str, role: str | None = None, index: int = 0, **params: Any) -> str:
        r = await self.log_response(job_id, role, index, **params)
        assert r.code == 200, r
        assert r.headers["Content-Type"].startswith("text/plain"), r.headers
        return r.text

    # -- waiting ---------------------------------------------------------------------------

    async def wait_for(
        self,
        check: Callable[[], Awaitable[T | None]],
        what: str,
        timeout: float = 60,
        job_id: str | None = None,
    ) -> T:
        deadline = time.monotonic() + timeout
        while True:
            value = await check()
            if value:
                return value
            if time.monotonic() > deadline:
                context = ""
                if job_id is not None:
                    context = (
                        f"\njob: {await self.job(job_id)}\nevents: {await self.events(job_id)}"
                    )
                raise AssertionError(f"timed out after {timeout}s waiting for {what}{context}")
            await asyncio.sleep(0.1)

    async def wait_state(self, job_id: str, *states: str, timeout: float = 60) -> dict[str, Any]:
        async def check() -> dict[str, Any] | None:
            job = await self.job(job_id)
            if job["state"] in states:
                return job
            if job["state"] in TERMINAL:
                raise AssertionError(
                    f"job {job_id} ended {job['state']} ({job.get('subState')}), expected {states}"
                    f"\njob: {job}\nevents: {await self.events(job_id)}"
                )
            return None

        return await self.wait_for(check, f"{job_id} to be {'/'.join(states)}", timeout, job_id)

    async def wait_log(
        self, job_id: str, text: str, role: str | None = None, index: int = 0, timeout: float = 60
    ) -> str:
        async def check() -> str | None:
            log = await self.log(job_id, role, index)
            return log if text in log else None

        return await self.wait_for(
            check, f"{text!r} in the log of {job_id} {role}-{index}", timeout, job_id
        )

    # -- task helpers ------------------------------------------------------------------------

    def release(self, name: str) -> None:
        """Let tasks that wait with :func:`wait_for_file` go on."""
        (self.root_dir / name).touch()

    def state_job_dirs(self) -> list[str]:
        jobs = self.state_dir / "jobs"
        return sorted(os.listdir(jobs)) if jobs.exists() else []


def wait_for_file(name: str, seconds: int = 60) -> str:
    """A shell line that waits until ``name`` exists in the working dir (fails after ``seconds``)."""
    tries = seconds * 10
    return (
        f"i=0; while [ ! -e {shlex.quote(name)} ]; do i=$((i+1)); "
        f"if [ $i -gt {tries} ]; then echo 'timed out waiting for {name}'; exit 99; fi; "
        "sleep 0.1; done"
    )


def job_spec(name: str, roles: dict[str, dict[str, Any]], **top: Any) -> dict[str, Any]:
    """A protocol-v2 job; each role: ``{instances, gpu, commands, …}`` (``gpu`` and ``ports``
    go to resourcePerInstance, other keys to the role as written)."""
    task_roles = {}
    for role, given in roles.items():
        spec = dict(given)
        resource = {"cpu": 1, "memoryMB": 256, "gpu": spec.pop("gpu", 0)}
        if "ports" in spec:
            resource["ports"] = spec.pop("ports")
        spec.setdefault("instances", 1)
        commands = spec.pop("commands")
        task_roles[role] = {**spec, "resourcePerInstance": resource, "commands": commands}
    return {"protocolVersion": 2, "name": name, "type": "job", **top, "taskRoles": task_roles}


def parse_env(log: str) -> dict[str, str]:
    """``KEY=value`` lines of a log (as ``env`` prints them)."""
    env = {}
    for line in log.splitlines():
        key, sep, value = line.partition("=")
        if sep and key.replace("_", "").isalnum():
            env[key] = value
    return env


def pid_alive(pid: int) -> bool:
    """True while ``pid`` is a live (not zombie) process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2 :].split()[0] not in ("Z", "X")
