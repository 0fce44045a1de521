"""``GET images`` and submissions against a real registry (Debian's docker-registry, images
pushed with skopeo): the pickers' answer lists the registry's repositories and tags with
what their images say; a tag the registry lacks is a 400 naming the field and the closest
tags; an image of an unlisted registry passes; custom images can be turned off; a registry
that goes down keeps its last list and says so; ``jupyter pai images`` prints the same."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from jupyter_pai.cli import main
from tests.registry import PushedImage, Registry, image_job, push_image, running_registry

from .pai import PAIClient

NGC = "nvcr.io/nvidia/pytorch:24.05-py3"
OLD = dt.datetime(2026, 1, 5, tzinfo=dt.timezone.utc)
NEW = dt.datetime(2026, 11, 20, tzinfo=dt.timezone.utc)


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Registry]:
    with running_registry(tmp_path_factory.mktemp("registry")) as r:
        yield r


@pytest.fixture(scope="module")
def pushed(registry: Registry) -> dict[str, PushedImage]:
    return {
        "2.3": push_image(registry, "team/pytorch", "2.3", created=OLD),
        "2.4": push_image(
            registry,
            "team/pytorch",
            "2.4",
            created=NEW,
            labels={"com.nvidia.cuda.version": "12.4"},
            env={"PYTORCH_VERSION": "2.4.0"},
            layer_bytes=8192,
        ),
        "tool": push_image(registry, "infra/tool", "1.0", created=OLD),
    }


@pytest.fixture
def pai_extra_config(
    request: pytest.FixtureRequest, registry: Registry, pushed: dict[str, PushedImage]
) -> dict[str, Any]:
    settings = {
        "image_registries": [{"url": registry.url, "kind": "oci"}],
        "image_refresh_seconds": 1.0,
        **getattr(request, "param", {}),
    }
    return {"PAIConfig": settings}


async def test_the_pickers_answer_lists_the_registrys_repositories_and_tags(
    pai: PAIClient, registry: Registry, pushed: dict[str, PushedImage]
) -> None:
    answer = await pai.get("images")
    assert [i["name"] for i in answer["items"]] == ["pytorch-2.4", "tensorflow-2.16", "python-3.11"]
    assert answer["customImages"] is True
    [status] = answer["registries"]
    assert status["ok"] and status["url"] == registry.url and status["error"] is None
    repositories = {r["name"]: r for r in answer["repositories"]}
    assert set(repositories) == {"team/pytorch", "infra/tool"}
    pytorch = repositories["team/pytorch"]
    assert pytorch["uri"] == f"{registry.host}/team/pytorch"
    assert [t["name"] for t in pytorch["tags"]] == ["2.4", "2.3"]  # newest first
    newest = pytorch["tags"][0]
    assert newest["uri"] == pushed["2.4"].uri
    assert newest["digest"] == pushed["2.4"].digest
    assert newest["size"] == pushed["2.4"].size
    assert dt.datetime.fromisoformat(newest["created"]) == NEW
    assert newest["cuda"] == "12.4"
    assert newest["framework"] == "pytorch 2.4.0"
    assert newest["nodesWithImage"] is None  # the local backend has no nodes to ask


async def test_a_tag_the_registry_lacks_is_a_400_naming_the_field_and_the_closest(
    pai: PAIClient, registry: Registry, pushed: dict[str, PushedImage]
) -> None:
    r = await pai.post_job(image_job(f"{registry.host}/team/pytorch:2.5", "typo"))
    assert r.code == 400, r
    [error] = r.json()["errors"]
    assert error["path"] == "prerequisites.0.uri"
    assert "2.5" in error["message"] and "2.4" in error["message"]
    r = await pai.post_job(image_job(f"{registry.host}/team/nothing:1", "norepo"))
    assert r.code == 400, r
    assert r.json()["errors"][0]["path"] == "prerequisites.0.uri"
    assert await pai.jobs() == []  # nothing was created


async def test_an_existing_tag_and_an_image_of_an_unlisted_registry_are_submitted(
    pai: PAIClient, pushed: dict[str, PushedImage]
) -> None:
    listed = await pai.submit(image_job(pushed["2.3"].uri, "listed"))
    typed = await pai.submit(image_job(NGC, "typed"))
    assert listed["spec"]["prerequisites"][0]["uri"] == pushed["2.3"].uri
    assert typed["spec"]["prerequisites"][0]["uri"] == NGC


@pytest.mark.parametrize("pai_extra_config", [{"custom_images": False}], indirect=True)
async def test_without_custom_images_only_listed_images_are_submitted(
    pai: PAIClient, pushed: dict[str, PushedImage]
) -> None:
    assert (await pai.get("images"))["customImages"] is False
    r = await pai.post_job(image_job(NGC, "typed"))
    assert r.code == 400, r
    assert r.json()["errors"][0]["path"] == "prerequisites.0.uri"
    assert "custom images are turned off" in r.json()["errors"][0]["message"]
    await pai.submit(image_job(pushed["2.4"].uri, "listed"))
    await pai.submit(image_job("python:3.11-slim", "catalogue"))


async def test_a_registry_that_goes_down_keeps_its_last_list_and_says_so(
    pai: PAIClient, registry: Registry, pushed: dict[str, PushedImage]
) -> None:
    first = await pai.get("images")
    assert first["registries"][0]["ok"]
    registry.stop()
    try:
        deadline = time.monotonic() + 30
        while True:
            started = time.monotonic()
            answer = await pai.get("images")
            assert time.monotonic() - started < 3, "a down registry held up the answer"
            status = answer["registries"][0]
            if not status["ok"]:
                break
            assert time.monotonic() < deadline, "the registry's state never said it was down"
            await asyncio.sleep(0.5)
        assert registry.url in status["error"]
        listed = dt.datetime.fromisoformat(status["listedAt"])
        assert listed >= dt.datetime.fromisoformat(first["registries"][0]["listedAt"])
        assert answer["repositories"] == first["repositories"]  # the last list stays
        # Nothing can be said about a tag now: the submission goes through.
        await pai.submit(image_job(f"{registry.host}/team/pytorch:2.4", "while-down"))
    finally:
        registry.start()


def test_jupyter_pai_images_prints_the_registrys_tags(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    pai_state_dir: Path,
    registry: Registry,
    pushed: dict[str, PushedImage],
) -> None:
    config = tmp_path / "config"
    config.mkdir()
    settings = {"PAIConfig": {"image_registries": [{"url": registry.url, "kind": "oci"}]}}
    (config / "jupyter_pai_config.json").write_text(json.dumps(settings))
    monkeypatch.setenv("JUPYTER_CONFIG_PATH", str(config))
    assert main(["images"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    header = next((line for line in lines if line.startswith("IMAGE")), "")
    assert header, out
    assert header.split() == [
        "IMAGE",
        "AGE",
        "SIZE",
        "CUDA",
        "FRAMEWORK",
        "SCAN",
        "ON",
        "GPU",
        "NODES",
    ]
    row = next(line for line in lines if line.startswith(pushed["2.4"].uri))
    assert "12.4" in row and "pytorch 2.4.0" in row
    assert main(["images", "team/pytorch", "--json"]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert [r["name"] for r in answer["repositories"]] == ["team/pytorch"]
    assert [t["name"] for t in answer["repositories"][0]["tags"]] == ["2.4", "2.3"]
