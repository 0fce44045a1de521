"""Hostile input: every operation of ``openapi.yaml`` fuzzed with schemathesis (valid and
invalid parameters and bodies, generated from the schema) against a real server on the
local backend. No answer is a 5xx; every 4xx is the JSON error of the design (a message,
and for a bad request the fields it names).

The server runs on the test's loop (pytest-jupyter); schemathesis and Hypothesis, which
are synchronous, run in a worker thread and reach it over HTTP."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import schemathesis
from hypothesis import HealthCheck, Phase, given, settings

from jupyter_pai.server.openapi import OPENAPI_PATH

from .pai import PAIClient, job_spec, wait_for_file

SCHEMA = schemathesis.openapi.from_path(OPENAPI_PATH)
EXAMPLES = 25  # per operation: about 15 operations, under a minute on 2 cores


def _defuse(body: Any) -> Any:
    """A generated job that is valid runs its commands: make every command ``true``, so
    that what the fuzzer writes is parsed and scheduled but never executed."""
    if not isinstance(body, dict):
        return body
    roles = body.get("taskRoles")
    if isinstance(roles, dict):
        for role in roles.values():
            if isinstance(role, dict) and "commands" in role:
                role["commands"] = ["true"]
    elif isinstance(roles, list):  # OpenPAI v1
        for role in roles:
            if isinstance(role, dict) and "command" in role:
                role["command"] = "true"
    return body


def _waits(timeout: Any) -> bool:
    """Whether the stream would stay open longer than a moment with this ``timeout``."""
    if timeout is None:
        return True
    try:
        return float(timeout) > 0.2
    except (TypeError, ValueError):
        return False


def _check(case: Any, response: Any) -> None:
    where = f"{case.method} {case.formatted_path} {case.query or ''}"
    assert response.status_code < 500, f"{where}: {response.status_code} {response.text[:500]}"
    if 400 <= response.status_code < 500 and response.status_code not in (404, 405):
        body = response.json()
        assert isinstance(body.get("message"), str) and body["message"], (where, body)
        assert isinstance(body.get("errors"), list), (where, body)
        if response.status_code == 400:
            named = {p.name for p in case.operation.iter_parameters()}
            said = body["message"] + json.dumps(body["errors"])
            assert body["errors"] or any(n in said for n in named), (where, body)


async def test_no_operation_answers_a_5xx_and_every_4xx_is_a_json_error(
    pai: PAIClient,
    jp_http_port: int,
    jp_base_url: str,
    jp_auth_header: dict[str, str],
    storage_root: Path,
) -> None:
    (storage_root / "notes.txt").write_text("hello\n")
    (storage_root / "sub").mkdir()
    running = await pai.submit(job_spec("fuzzed", {"w": {"commands": [wait_for_file("go")]}}))
    await pai.wait_state(running["id"], "RUNNING")
    base_url = f"http://127.0.0.1:{jp_http_port}{jp_base_url}pai/api"
    operations = [op.ok() for op in SCHEMA.get_all_operations()]
    assert len(operations) >= 14, [o.label for o in operations]

    statuses: dict[int, int] = {}

    def fuzz() -> list[str]:
        done = []
        for operation in operations:

            @settings(
                max_examples=EXAMPLES,
                deadline=None,
                phases=[Phase.explicit, Phase.generate],
                suppress_health_check=list(HealthCheck),
                database=None,
            )
            @given(case=operation.as_strategy())
            def one(case: Any) -> None:
                if case.path_parameters and "job_id" in case.path_parameters:
                    # Half the time a real job, so deeper branches are reached too.
                    if hash(str(case.path_parameters)) % 2:
                        case.path_parameters["job_id"] = running["id"]
                case.body = _defuse(case.body)
                if case.path == "/job-changes" and isinstance(case.query, dict):
                    # An event stream stays open: end a valid one at once (the fuzzed
                    # timeout is kept where it is not a number the server would wait for).
                    if _waits(case.query.get("timeout")):
                        case.query["timeout"] = "0.2"
                response = case.call(base_url=base_url, headers=jp_auth_header, timeout=30)
                statuses[response.status_code] = statuses.get(response.status_code, 0) + 1
                _check(case, response)

            one()
            done.append(operation.label)
        return done

    done = await asyncio.to_thread(fuzz)
    print(f"\nfuzzed {len(done)} operations; answers by status: {sorted(statuses.items())}")
    # Both kinds were reached: accepted requests and refused ones.
    assert sum(n for code, n in statuses.items() if code < 300) >= 20, statuses
    assert sum(n for code, n in statuses.items() if 400 <= code < 500) >= 50, statuses
    # The server still serves.
    assert (await pai.get("info"))["backend"] == "local"
    pai.release("go")
