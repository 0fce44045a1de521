"""The image catalogue against real registries: Debian's docker-registry (distribution 2.8)
started per test, open, with htpasswd basic auth, or with token auth from a token issuer
(tests/registry.py); images pushed with skopeo so their dates, sizes and labels are known."""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import socket
import time
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from jupyter_pai.images import ImageCatalogue, RegistrySettings
from tests.registry import PushedImage, Registry, push_image, running_registry


def day(n: int) -> datetime:
    return datetime(2026, 3, n, 12, 0, tzinfo=timezone.utc)


def catalogue(entries: list[dict[str, Any]], **options: Any) -> ImageCatalogue:
    return ImageCatalogue(
        [RegistrySettings.from_config(i, e) for i, e in enumerate(entries)], **options
    )


def credentials_file(tmp_path: Path, registry: Registry, password: str | None = None) -> str:
    path = tmp_path / "robot.json"
    path.write_text(
        json.dumps({"username": registry.username, "password": password or registry.password})
    )
    return str(path)


@pytest.fixture
def open_registry(tmp_path: Path) -> Iterator[Registry]:
    with running_registry(tmp_path / "open") as registry:
        yield registry


async def test_lists_repositories_and_tags_newest_first(open_registry: Registry) -> None:
    reg = open_registry
    old = push_image(
        reg,
        "team/pytorch",
        "2.4",
        labels={"com.nvidia.cuda.version": "12.4", "maintainer": "ml-team"},
        env={"PYTORCH_VERSION": "2.4.0"},
        created=day(1),
        layer_bytes=3000,
    )
    new = push_image(
        reg,
        "team/pytorch",
        "2.4.1",
        labels={"ai.framework": "pytorch 2.4.1"},
        annotations={"org.opencontainers.image.source": "https://git.example.com/img"},
        env={"CUDA_VERSION": "12.6.1"},
        created=day(3),
        layer_bytes=5000,
    )
    mid = push_image(reg, "team/pytorch", "2.3", env={"TENSORFLOW_VERSION": "2.16"}, created=day(2))
    tool = push_image(reg, "tools/debug", "1", created=day(1))
    images = catalogue([{"url": reg.url}])
    try:
        await images.refresh()
        [status] = images.statuses()
        assert (status.name, status.url, status.kind, status.ok, status.error) == (
            reg.host,
            reg.url,
            "oci",
            True,
            None,
        )
        assert (status.repositories, status.tags, status.truncated) == (2, 4, False)
        assert status.listed_at is not None
        by_name = {r.name: r for r in images.repositories()}
        assert sorted(by_name) == ["team/pytorch", "tools/debug"]
        pytorch = by_name["team/pytorch"]
        assert (pytorch.registry, pytorch.uri) == (reg.host, f"{reg.host}/team/pytorch")
        assert [t.name for t in pytorch.tags] == ["2.4.1", "2.3", "2.4"]
        expected: dict[str, PushedImage] = {"2.4.1": new, "2.3": mid, "2.4": old}
        for tag in pytorch.tags:
            pushed = expected[tag.name]
            assert (tag.uri, tag.digest, tag.created, tag.size) == (
                pushed.uri,
                pushed.digest,
                pushed.created,
                pushed.size,
            )
        newest, middle, oldest = pytorch.tags
        assert newest.labels == {
            "ai.framework": "pytorch 2.4.1",
            "org.opencontainers.image.source": "https://git.example.com/img",
        }
        assert (newest.cuda, newest.framework) == ("12.6.1", "pytorch 2.4.1")
        assert (middle.cuda, middle.framework) == (None, "tensorflow 2.16")
        assert oldest.labels == {"com.nvidia.cuda.version": "12.4", "maintainer": "ml-team"}
        assert (oldest.cuda, oldest.framework) == ("12.4", "pytorch 2.4.0")
        assert old.size != new.size  # the sizes compared above are each tag's own
        assert by_name["tools/debug"].tags[0].digest == tool.digest
        # The REST shape: camelCase.
        assert {"created", "scanSeverity", "nodesWithImage", "labels"} <= set(newest.to_json())
        assert "listedAt" in status.to_json()
    finally:
        await images.close()


async def test_catalog_is_paged_with_link(open_registry: Registry) -> None:
    reg = open_registry
    for i in range(5):
        push_image(reg, "team/many", f"v{i}", created=day(i + 1), layer_bytes=256)
    for name in ("a/one", "b/two", "c/three"):
        push_image(reg, name, "1", layer_bytes=256)
    # The registry really pages _catalog at n=2: the catalogue must follow Link to see all.
    async with aiohttp.ClientSession() as session:
        async with session.get(f"{reg.url}/v2/_catalog?n=2") as response:
            assert len((await response.json())["repositories"]) == 2
            assert 'rel="next"' in response.headers["Link"]
    images = catalogue([{"url": reg.url}], page_size=2)
    try:
        await images.refresh()
        by_name = {r.name: r for r in images.repositories()}
        assert sorted(by_name) == ["a/one", "b/two", "c/three", "team/many"]
        assert [t.name for t in by_name["team/many"].tags] == ["v4", "v3", "v2", "v1", "v0"]
        assert images.statuses()[0].tags == 8
    finally:
        await images.close()


async def test_tags_are_paged_with_link() -> None:
    """distribution 2.8 answers every tag at once whatever ``n`` says (3.0 pages them), so
    this pages them as distribution 3.0 does (``n``, ``last``, ``Link: <…>; rel="next"``)
    from a stand-in; only names are asked, manifests are not."""
    tags = [f"v{i}" for i in range(7)]
    asked: list[str] = []

    async def tags_list(request: web.Request) -> web.Response:
        asked.append(request.path_qs)
        n = int(request.query["n"])
        last = request.query.get("last")
        start = tags.index(last) + 1 if last else 0
        page = tags[start : start + n]
        headers = {}
        if start + n < len(tags):
            headers["Link"] = f'</v2/team/many/tags/list?n={n}&last={page[-1]}>; rel="next"'
        return web.json_response({"name": "team/many", "tags": page}, headers=headers)

    app = web.Application()
    app.router.add_get("/v2/team/many/tags/list", tags_list)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    images = catalogue(
        [{"url": f"http://127.0.0.1:{port}", "repositories": ["team/many"]}],
        page_size=3,
        describe_tags=0,
    )
    try:
        await images.refresh()
        [repository] = images.repositories()
        assert [t.name for t in repository.tags] == ["v6", "v5", "v4", "v3", "v2", "v1", "v0"]
        assert asked == [
            "/v2/team/many/tags/list?n=3",
            "/v2/team/many/tags/list?n=3&last=v2",
            "/v2/team/many/tags/list?n=3&last=v5",
        ]
    finally:
        await images.close()
        await runner.cleanup()


async def test_basic_auth_with_a_credentials_file(tmp_path: Path) -> None:
    with running_registry(tmp_path / "basic", auth="basic") as reg:
        pushed = push_image(reg, "team/pytorch", "2.4", created=day(1))
        # A Docker config.json (``auths``) works as well as a plain pair.
        docker_config = tmp_path / "config.json"
        encoded = base64.b64encode(f"{reg.username}:{reg.password}".encode()).decode()
        docker_config.write_text(json.dumps({"auths": {reg.host: {"auth": encoded}}}))
        images = catalogue(
            [
                {"url": reg.url, "credentials": {"file": credentials_file(tmp_path, reg)}},
                {"url": reg.url, "name": "again", "credentials": {"file": str(docker_config)}},
                {"url": reg.url, "name": "anonymous"},
            ]
        )
        try:
            await images.refresh()
            plain, docker, anonymous = images.statuses()
            assert plain.ok and docker.ok, (plain.error, docker.error)
            assert not anonymous.ok
            assert anonymous.error == f"{reg.url} needs credentials (401)"
            tags = next(r.tags for r in images.repositories() if r.registry == "again")
            assert (tags[0].digest, tags[0].size) == (pushed.digest, pushed.size)
        finally:
            await images.close()


async def test_token_auth_with_a_secret(tmp_path: Path) -> None:
    with running_registry(tmp_path / "token", auth="token") as reg:
        pushed = push_image(reg, "team/pytorch", "2.4", labels={"ai.framework": "pytorch 2.4"})
        asked: list[str] = []

        async def read_secret(name: str) -> tuple[str, str] | None:
            asked.append(name)
            assert reg.username is not None and reg.password is not None
            return reg.username, reg.password

        images = catalogue(
            [{"url": reg.url, "credentials": {"secret": "team-registry"}}], credentials=read_secret
        )
        try:
            await images.refresh()
            [status] = images.statuses()
            assert status.ok, status.error
            [repository] = images.repositories()
            assert repository.tags[0].digest == pushed.digest
            assert repository.tags[0].framework == "pytorch 2.4"
            assert asked == ["team-registry"]
            # Bearer tokens were fetched for the catalogue and the repository.
            assert "registry:catalog:*" in reg.token_scopes
            assert "repository:team/pytorch:pull" in reg.token_scopes
        finally:
            await images.close()


async def test_configured_repositories_need_no_catalog(tmp_path: Path) -> None:
    # The token issuer refuses registry:catalog:*: a _catalog call would fail the round.
    with running_registry(tmp_path / "token", auth="token", grant_catalog=False) as reg:
        push_image(reg, "team/pytorch", "2.4")
        push_image(reg, "team/hidden", "1")
        images = catalogue(
            [
                {
                    "url": reg.url,
                    "repositories": ["team/pytorch", "team/absent"],
                    "credentials": {"file": credentials_file(tmp_path, reg)},
                }
            ]
        )
        try:
            await images.refresh()
            [status] = images.statuses()
            assert status.ok, status.error
            assert [r.name for r in images.repositories()] == ["team/pytorch"]
            assert not any(s.startswith("registry:") for s in reg.token_scopes)
        finally:
            await images.close()


@pytest.mark.parametrize("auth", ["basic", "token"])
async def test_wrong_credentials_are_reported_not_raised(
    tmp_path: Path, auth: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    wrong = "not-the-password-xyz"
    with running_registry(tmp_path / auth, auth=auth) as reg:  # type: ignore[arg-type]
        push_image(reg, "team/pytorch", "2.4")
        images = catalogue(
            [{"url": reg.url, "credentials": {"file": credentials_file(tmp_path, reg, wrong)}}]
        )
        try:
            await images.refresh()
            [status] = images.statuses()
            assert not status.ok
            assert status.error is not None and "refused the credentials" in status.error
            assert reg.url in status.error
            assert images.repositories() == []
            # The registry cannot be judged: submissions pass.
            assert await images.check(f"{reg.host}/team/pytorch:9.9") is None
            shown = json.dumps([s.to_json() for s in images.statuses()]) + caplog.text
            assert wrong not in shown and (reg.password or "") not in shown
        finally:
            await images.close()


async def test_a_registry_that_goes_down_keeps_its_lists(open_registry: Registry) -> None:
    reg = open_registry
    push_image(reg, "team/pytorch", "2.4", created=day(1))
    images = catalogue([{"url": reg.url}], timeout=3.0)
    try:
        await images.refresh()
        before = images.repositories()
        listed_at = images.statuses()[0].listed_at
        assert listed_at is not None
        reg.stop()
        started = time.monotonic()
        await images.refresh()
        assert time.monotonic() - started < 3.0
        [status] = images.statuses()
        assert not status.ok and status.listed_at == listed_at
        assert status.error == (
            f"cannot reach {reg.url}: connection refused; showing the list from {listed_at:%H:%M} UTC"
        )
        assert images.repositories() == before
        # Down: a listed tag passes, an unknown one cannot be judged.
        assert await images.check(f"{reg.host}/team/pytorch:2.4") is None
        assert await images.check(f"{reg.host}/team/pytorch:7.7") is None
        reg.start()
        await images.refresh()
        assert images.statuses()[0].ok
    finally:
        await images.close()


async def test_a_registry_that_never_answers_is_bounded_by_the_timeout() -> None:
    # A listening socket nobody accepts on: connections open, no answer ever comes.
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)
        url = f"http://127.0.0.1:{silent.getsockname()[1]}"
        images = catalogue([{"url": url}], timeout=1.0)
        try:
            started = time.monotonic()
            await asyncio.wait_for(images.refresh(), 10)
            elapsed = time.monotonic() - started
            assert 0.9 < elapsed < 2.5, elapsed
            [status] = images.statuses()
            assert status.error == f"{url} did not answer within 1s"
            # The background loop: started, first round done within the bound, closed cleanly.
            images.start()
            assert await images.ready(3.0)
        finally:
            await images.close()


async def test_check_names_the_closest_tags(open_registry: Registry) -> None:
    reg = open_registry
    for tag in ("2.4", "2.4.1", "2.3", "1.13"):
        push_image(reg, "team/pytorch", tag, layer_bytes=256)
    images = catalogue([{"url": reg.url}])
    try:
        await images.refresh()
        assert await images.check(f"{reg.host}/team/pytorch:2.4") is None
        assert await images.check(f"{reg.host}/team/pytorch:2.5") == (
            f"tag '2.5' is not in {reg.host}/team/pytorch; closest: 2.3, 2.4, 2.4.1"
        )
        assert await images.check(f"{reg.host}/team/pytorhc:2.4") == (
            f"repository 'team/pytorhc' is not in {reg.host}; closest: team/pytorch"
        )
        # Another registry, or Docker Hub: nothing can be said.
        assert await images.check("pytorch/pytorch:2.4.0-cuda12.4-cudnn9-runtime") is None
        assert await images.check("127.0.0.1:1/team/pytorch:2.5") is None
        # Pushed after the listing: asked live, so it passes at once.
        push_image(reg, "team/pytorch", "2.5", layer_bytes=256)
        assert await images.check(f"{reg.host}/team/pytorch:2.5") is None
        assert images.registry_for(f"{reg.host}/team/pytorch:2.5") is images.settings[0]
        assert images.registry_for("python:3.11") is None
    finally:
        await images.close()


async def test_bounds_mark_the_status_truncated(open_registry: Registry) -> None:
    reg = open_registry
    for i in range(4):
        push_image(reg, "team/pytorch", f"2.{i}", created=day(i + 1), layer_bytes=256)
    push_image(reg, "zz/other", "1", layer_bytes=256)
    images = catalogue([{"url": reg.url}], max_tags=3, describe_tags=2)
    try:
        await images.refresh()
        [status] = images.statuses()
        assert status.truncated and status.tags == 4
        pytorch = next(r for r in images.repositories() if r.name == "team/pytorch")
        # The newest 3 kept; the newest 2 described, the third listed by name only.
        assert [t.name for t in pytorch.tags] == ["2.3", "2.2", "2.1"]
        assert [t.created is not None for t in pytorch.tags] == [True, True, False]
    finally:
        await images.close()
    images = catalogue([{"url": reg.url}], max_repositories=1)
    try:
        await images.refresh()
        [status] = images.statuses()
        assert status.truncated and status.repositories == 1
        assert [r.name for r in images.repositories()] == ["team/pytorch"]
    finally:
        await images.close()


async def test_credentials_never_follow_a_link_or_redirect_to_another_host(tmp_path: Path) -> None:
    """A registry's ``Link`` or redirect naming another host gets no Authorization there."""
    seen: list[str | None] = []

    async def elsewhere(request: web.Request) -> web.Response:
        seen.append(request.headers.get("Authorization"))
        return web.json_response({"repositories": ["stolen/x"]})

    other = web.Application()
    other.router.add_get("/{tail:.*}", elsewhere)
    other_runner = web.AppRunner(other)
    await other_runner.setup()
    await web.TCPSite(other_runner, "127.0.0.1", 0).start()
    other_url = f"http://127.0.0.1:{other_runner.addresses[0][1]}"

    async def catalog(request: web.Request) -> web.Response:
        if request.headers.get("Authorization") is None:
            return web.Response(status=401, headers={"WWW-Authenticate": 'Basic realm="r"'})
        if request.query.get("redirect"):
            raise web.HTTPFound(f"{other_url}/v2/_catalog")
        link = f'<{other_url}/v2/_catalog?n=1&last=a>; rel="next"'
        return web.json_response({"repositories": ["a"]}, headers={"Link": link})

    async def redirected_tags(request: web.Request) -> web.Response:
        if request.headers.get("Authorization") is None:
            return web.Response(status=401, headers={"WWW-Authenticate": 'Basic realm="r"'})
        raise web.HTTPFound(f"{other_url}/v2/a/tags/list")

    app = web.Application()
    app.router.add_get("/v2/_catalog", catalog)
    app.router.add_get("/v2/a/tags/list", redirected_tags)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    url = f"http://127.0.0.1:{runner.addresses[0][1]}"
    robot = tmp_path / "robot.json"
    robot.write_text(json.dumps({"username": "u", "password": "p"}))
    images = catalogue([{"url": url, "credentials": {"file": str(robot)}}], page_size=1)
    try:
        await images.refresh()
        [status] = images.statuses()
        assert not status.ok
        assert (
            status.error == f"{url} pointed to another host ({other_url.removeprefix('http://')})"
        )
        await images.close()
        # The redirect is followed without the credentials.
        images = catalogue(
            [{"url": url, "repositories": ["a"], "credentials": {"file": str(robot)}}]
        )
        await images.refresh()
        assert seen and all(header is None for header in seen), seen
    finally:
        await images.close()
        await runner.cleanup()
        await other_runner.cleanup()
