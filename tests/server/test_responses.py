"""What the server really answers is what ``openapi.yaml`` says: every list in its
``{"items": [...]}`` envelope, a submission a ``SubmitResult`` with its warnings, each body
valid against the response schema of its path, verb and status."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema

from jupyter_pai.server import openapi

from .pai import PAIClient, job_spec, wait_for_file

DOC = openapi.load()


def check(path: str, verb: str, status: int, body: Any) -> None:
    """Validate ``body`` against the document's schema for this answer (refs resolved in it)."""
    response = DOC["paths"][path][verb]["responses"][str(status)]
    schema = response["content"]["application/json"]["schema"]
    jsonschema.validate(body, {**schema, "components": DOC["components"]})


async def test_every_json_answer_matches_the_openapi_document(
    pai: PAIClient, storage_root: Path
) -> None:
    (storage_root / "a.txt").write_text("alpha\n")
    spec = job_spec("shaped", {"w": {"gpu": 1, "commands": [wait_for_file("go-shaped")]}})
    spec["unknownField"] = 1  # ignored, and said so
    r = await pai.post_job(spec)
    assert r.code == 201, r
    created = r.json()
    check("/jobs", "post", 201, created)
    assert set(created) == {"job", "warnings"}
    assert created["job"]["name"] == "shaped"
    assert [w["path"] for w in created["warnings"]] == ["unknownField"]
    job_id = created["job"]["id"]
    await pai.wait_state(job_id, "RUNNING")

    answers = {
        ("/info", "info"),
        ("/images", "images"),
        ("/virtual-clusters", "virtual-clusters"),
        ("/jobs", "jobs"),
        ("/jobs/{job_id}", f"jobs/{job_id}"),
        ("/jobs/{job_id}/events", f"jobs/{job_id}/events"),
        ("/storage", "storage"),
        ("/storage/{name}", "storage/work"),
    }
    for template, path in answers:
        body = await pai.get(*path.split("/"))
        check(template, "get", 200, body)
    assert [j["id"] for j in await pai.items("jobs")] == [job_id]
    assert [vc["name"] for vc in await pai.items("virtual-clusters")] == ["default"]
    assert "Scheduled" in {e["reason"] for e in await pai.items("jobs", job_id, "events")}
    assert [s["name"] for s in await pai.items("storage")] == ["work"]

    r = await pai.request(
        "POST", "convert", body="name: c\ncommand: echo\n", headers={"Content-Type": "text/yaml"}
    )
    assert r.code == 200, r
    check("/convert", "post", 200, r.json())

    r = await pai.request("DELETE", "jobs", job_id)
    assert r.code == 200, r
    check("/jobs/{job_id}", "delete", 200, r.json())
    await pai.wait_state(job_id, "STOPPED", timeout=30)


async def test_a_submission_without_warnings_says_so(pai: PAIClient) -> None:
    r = await pai.post_job("name: plain\ncommand: echo hi\n")
    assert r.code == 201, r
    check("/jobs", "post", 201, r.json())
    assert r.json()["warnings"] == []
    await pai.wait_state(r.json()["job"]["id"], "SUCCEEDED")
