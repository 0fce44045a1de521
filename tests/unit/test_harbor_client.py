"""HarborClient against a stand-in written from Harbor's published API description (API v2.0,
goharbor/harbor ``api/v2.0/swagger.yaml``), not a running Harbor, whose core cannot run
here: ``GET /api/v2.0/projects``, ``…/projects/{project_name}/repositories`` and
``…/repositories/{repository_name}/artifacts`` with ``page``/``page_size`` paging
(``X-Total-Count`` and ``Link``), the repository name inside the project URL-encoded twice,
``Artifact`` fields (digest, size, push_time, tags[].name, extra_attrs, annotations,
scan_overview keyed by the report MIME type) and a robot account's basic auth."""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from jupyter_pai.images import ImageCatalogue, RegistrySettings
from jupyter_pai.images.auth import Transport
from jupyter_pai.images.harbor import REPORT_TYPES, HarborClient, repository_path

ROBOT = ("robot$team+picker", "robot-secret-1")
NEW_REPORT = REPORT_TYPES[0]


def artifact(digest: str, tags: list[str], pushed: str, **extra: Any) -> dict[str, Any]:
    return {
        "id": abs(hash(digest)) % 10_000,
        "type": "IMAGE",
        "media_type": "application/vnd.oci.image.config.v1+json",
        "manifest_media_type": "application/vnd.oci.image.manifest.v1+json",
        "digest": digest,
        "size": extra.pop("size", 1000),
        "push_time": pushed,
        "pull_time": "0001-01-01T00:00:00.000Z",
        "tags": [
            {
                "id": i,
                "name": t,
                "push_time": pushed,
                "pull_time": "0001-01-01T00:00:00.000Z",
                "immutable": False,
            }
            for i, t in enumerate(tags)
        ],
        "extra_attrs": extra.pop("extra_attrs", {}),
        "annotations": extra.pop("annotations", None),
        "scan_overview": extra.pop("scan_overview", None),
        **extra,
    }


@dataclass
class Harbor:
    url: str
    requests: list[str] = field(default_factory=list)
    raw_paths: list[str] = field(default_factory=list)


PROJECTS = [
    {"project_id": i + 1, "name": n, "repo_count": 1}
    for i, n in enumerate(["team", "vision", "empty"])
]
REPOSITORIES = {
    "team": [{"id": 1, "project_id": 1, "name": "team/pytorch", "artifact_count": 3}],
    "vision": [
        {"id": 2, "project_id": 2, "name": "vision/cv/detector", "artifact_count": 1},
        {"id": 3, "project_id": 2, "name": "vision/ocr", "artifact_count": 0},
        {"id": 4, "project_id": 2, "name": "vision/gone", "artifact_count": 0},
    ],
    "empty": [],
}
ARTIFACTS = {
    "team/pytorch": [
        artifact(
            "sha256:" + "c" * 64,
            ["2.4.1", "2.4-latest"],
            "2026-03-03T10:00:00.123456789Z",
            size=5_000_000,
            extra_attrs={
                "architecture": "amd64",
                "os": "linux",
                "created": "2026-03-02T09:00:00Z",
                "config": {
                    "Env": ["PATH=/usr/bin", "CUDA_VERSION=12.4.1", "PYTORCH_VERSION=2.4.1"],
                    "Labels": {"maintainer": "ml-team"},
                },
            },
            annotations={"org.opencontainers.image.source": "https://git.example.com/pytorch"},
            scan_overview={
                NEW_REPORT: {
                    "report_id": "r1",
                    "scan_status": "Success",
                    "severity": "High",
                    "duration": 12,
                    "summary": {"total": 17, "fixable": 9, "summary": {"High": 2, "Medium": 15}},
                    "complete_percent": 100,
                }
            },
        ),
        artifact(
            "sha256:" + "b" * 64,
            ["2.4"],
            "2026-03-02T10:00:00Z",
            extra_attrs={"config": {"Labels": {"com.nvidia.cuda.version": "12.1"}}},
            scan_overview={
                REPORT_TYPES[1]: {
                    "severity": "Low",
                    "summary": {"total": 1},
                    "scan_status": "Success",
                }
            },
        ),
        artifact("sha256:" + "a" * 64, ["2.3"], "2026-03-01T10:00:00Z"),
        artifact("sha256:" + "9" * 64, [], "2026-02-28T10:00:00Z"),  # untagged: not offered
    ],
    "vision/ocr": [],  # empty: not offered; vision/gone answers 404 (deleted since listed)
    "vision/cv/detector": [
        artifact(
            "sha256:" + "d" * 64,
            ["v1"],
            "2026-03-04T10:00:00Z",
            extra_attrs={"config": {"Labels": {"ai.framework": "tensorflow 2.16"}}},
        )
    ],
}


def page(request: web.Request, items: list[Any], *, link: bool) -> web.Response:
    number = int(request.query.get("page", "1"))
    size = int(request.query.get("page_size", "10"))
    chunk = items[(number - 1) * size : number * size]
    headers = {"X-Total-Count": str(len(items))}
    if link and number * size < len(items):
        query = {**request.query, "page": str(number + 1)}
        headers["Link"] = (
            f'<{request.path}?{"&".join(f"{k}={v}" for k, v in query.items())}>; rel="next"'
        )
    return web.json_response(chunk, headers=headers)


@pytest.fixture
async def harbor() -> AsyncIterator[Harbor]:
    state = Harbor(url="")

    @web.middleware
    async def robot_only(
        request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        state.requests.append(request.path_qs)
        state.raw_paths.append(request.raw_path)
        expected = "Basic " + base64.b64encode(":".join(ROBOT).encode()).decode()
        if request.headers.get("Authorization") != expected:
            return web.json_response(
                {"errors": [{"code": "UNAUTHORIZED", "message": "unauthorized"}]},
                status=401,
                headers={"WWW-Authenticate": 'Basic realm="harbor"'},
            )
        return await handler(request)

    async def projects(request: web.Request) -> web.Response:
        return page(request, PROJECTS, link=True)  # Link and X-Total-Count

    async def repositories(request: web.Request) -> web.Response:
        return page(request, REPOSITORIES.get(request.match_info["project"], []), link=False)

    async def artifacts(request: web.Request) -> web.Response:
        # The name inside the project was encoded twice: once decoded it is still encoded.
        encoded = request.match_info["repository"]
        name = f"{request.match_info['project']}/{encoded.replace('%2F', '/')}"
        if name not in ARTIFACTS:
            return web.json_response({"errors": [{"code": "NOT_FOUND"}]}, status=404)
        found = sorted(
            ARTIFACTS[name],
            key=lambda a: a["push_time"],
            reverse=request.query.get("sort") == "-push_time",
        )
        if (
            request.query.get("with_tag") != "true"
            or request.query.get("with_scan_overview") != "true"
        ):
            found = [{**a, "tags": None, "scan_overview": None} for a in found]
        if not request.headers.get("X-Accept-Vulnerabilities"):
            found = [{**a, "scan_overview": None} for a in found]
        return page(request, found, link=True)

    app = web.Application(middlewares=[robot_only])
    app.router.add_get("/api/v2.0/projects", projects)
    app.router.add_get("/api/v2.0/projects/{project}/repositories", repositories)
    app.router.add_get(
        "/api/v2.0/projects/{project}/repositories/{repository}/artifacts", artifacts
    )
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    state.url = f"http://127.0.0.1:{runner.addresses[0][1]}"
    try:
        yield state
    finally:
        await runner.cleanup()


def test_a_slashed_repository_name_is_encoded_twice() -> None:
    assert repository_path("vision/cv/detector") == "vision/repositories/cv%252Fdetector"
    assert repository_path("team/pytorch") == "team/repositories/pytorch"


def client(url: str, session: aiohttp.ClientSession, **entry: Any) -> HarborClient:
    settings = RegistrySettings.from_config(0, {"url": url, "kind": "harbor", **entry})
    transport = Transport(session, url, timeout=5, semaphore=asyncio.Semaphore(4), basic_first=True)
    transport.set_credentials(ROBOT)
    return HarborClient(settings, transport, page_size=2)


async def test_projects_and_repositories_are_paged(harbor: Harbor) -> None:
    async with aiohttp.ClientSession() as session:
        names, truncated = await client(harbor.url, session).repositories(100)
    assert (names, truncated) == (
        ["team/pytorch", "vision/cv/detector", "vision/ocr", "vision/gone"],
        False,
    )
    # Projects followed Link to page 2; repositories (no Link) followed X-Total-Count.
    assert "/api/v2.0/projects?page=2&page_size=2" in harbor.requests
    assert "/api/v2.0/projects/vision/repositories?page=2&page_size=2" in harbor.requests
    async with aiohttp.ClientSession() as session:
        names, truncated = await client(harbor.url, session, projects=["vision"]).repositories(100)
    assert (names, truncated) == (["vision/cv/detector", "vision/ocr", "vision/gone"], False)
    async with aiohttp.ClientSession() as session:
        names, truncated = await client(harbor.url, session).repositories(2)
    assert (names, truncated) == (["team/pytorch", "vision/cv/detector"], True)


async def test_artifacts_become_tags_with_scan_severity(harbor: Harbor) -> None:
    async with aiohttp.ClientSession() as session:
        harbor_client = client(harbor.url, session, name="harbor")
        tags, truncated = await harbor_client.artifacts("team/pytorch", 10)
        detector, _ = await harbor_client.artifacts("vision/cv/detector", 10)
    assert not truncated
    host = harbor.url.removeprefix("http://")
    assert [t.name for t in tags] == ["2.4.1", "2.4-latest", "2.4", "2.3"]
    newest = tags[0]
    assert newest.uri == f"{host}/team/pytorch:2.4.1"
    assert (newest.digest, newest.size) == ("sha256:" + "c" * 64, 5_000_000)
    assert newest.created == datetime(2026, 3, 2, 9, 0, tzinfo=timezone.utc)  # built, not pushed
    assert newest.labels == {
        "maintainer": "ml-team",
        "org.opencontainers.image.source": "https://git.example.com/pytorch",
    }
    assert (newest.cuda, newest.framework) == ("12.4.1", "pytorch 2.4.1")
    assert (newest.scan_severity, newest.vulnerabilities) == ("High", 17)
    older = tags[2]
    assert (older.cuda, older.scan_severity, older.vulnerabilities) == ("12.1", "Low", 1)
    assert older.created == datetime(2026, 3, 2, 10, 0, tzinfo=timezone.utc)  # push_time
    assert (tags[3].scan_severity, tags[3].vulnerabilities) == (None, None)
    assert detector[0].uri == f"{host}/vision/cv/detector:v1"
    assert detector[0].framework == "tensorflow 2.16"
    assert any("/repositories/cv%252Fdetector/artifacts" in p for p in harbor.raw_paths)
    asked = next(r for r in harbor.requests if "/pytorch/artifacts" in r)
    for parameter in ("with_tag=true", "with_scan_overview=true", "sort=-push_time", "page_size=2"):
        assert parameter in asked


async def test_the_catalogue_lists_harbor_and_bounds_tags(harbor: Harbor, tmp_path: Any) -> None:
    robot = tmp_path / "robot.json"
    robot.write_text(json.dumps({"username": ROBOT[0], "password": ROBOT[1]}))
    entry = {
        "url": harbor.url,
        "kind": "harbor",
        "name": "harbor",
        "credentials": {"file": str(robot)},
    }
    images = ImageCatalogue([RegistrySettings.from_config(0, entry)], max_tags=2, page_size=2)
    try:
        await images.refresh()
        [status] = images.statuses()
        assert (status.ok, status.kind, status.repositories, status.tags, status.truncated) == (
            True,
            "harbor",
            2,
            3,
            True,
        )
        pytorch = next(r for r in images.repositories() if r.name == "team/pytorch")
        assert pytorch.registry == "harbor"
        assert [t.name for t in pytorch.tags] == ["2.4.1", "2.4-latest"]
        host = harbor.url.removeprefix("http://")
        assert await images.check(f"{host}/team/pytorch:2.4") is None  # asked live
        assert await images.check(f"{host}/team/pytorch:2.5") == (
            f"tag '2.5' is not in {host}/team/pytorch; closest: 2.3, 2.4, 2.4.1"
        )
    finally:
        await images.close()


async def test_a_wrong_robot_secret_is_reported(harbor: Harbor, tmp_path: Any) -> None:
    robot = tmp_path / "robot.json"
    robot.write_text(json.dumps({"username": ROBOT[0], "password": "wrong-secret"}))
    entry = {"url": harbor.url, "kind": "harbor", "credentials": {"file": str(robot)}}
    images = ImageCatalogue([RegistrySettings.from_config(0, entry)])
    try:
        await images.refresh()
        [status] = images.statuses()
        assert not status.ok
        assert status.error == f"{harbor.url} refused the credentials (401)"
        assert "wrong-secret" not in status.model_dump_json()
    finally:
        await images.close()
