"""The launch form's image picker against a real registry (Debian's docker-registry): pick a
repository, then a tag; the line under the tag tells its age, size, CUDA and framework from
the image's labels; the submitted job runs exactly that tag's URI; a registry that goes down
is told in words while its last list stays."""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.registry import PushedImage, Registry, push_image, running_registry

from .conftest import Lab, job_row, open_page, open_panel, run_lab, shot

NOW = dt.datetime.now(dt.timezone.utc).replace(microsecond=0)


def decimal_size(n: int) -> str:
    """The panel's size words: decimal units, one decimal under 10."""
    value, unit = float(n), 0
    units = ["B", "kB", "MB", "GB", "TB"]
    while value >= 1000 and unit < len(units) - 1:
        value /= 1000
        unit += 1
    return f"{n} B" if unit == 0 else f"{value:.{1 if value < 10 else 0}f} {units[unit]}"


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Registry]:
    with running_registry(tmp_path_factory.mktemp("registry")) as r:
        yield r


@pytest.fixture(scope="module")
def pushed(registry: Registry) -> dict[str, PushedImage]:
    return {
        "2.3": push_image(registry, "team/pytorch", "2.3", created=NOW - dt.timedelta(days=70)),
        "2.4": push_image(
            registry,
            "team/pytorch",
            "2.4",
            created=NOW - dt.timedelta(days=3, hours=1),
            labels={"com.nvidia.cuda.version": "12.1", "org.example.team": "vision"},
            env={"PYTORCH_VERSION": "2.4.0"},
            layer_bytes=3_000_000,
        ),
        "tools-1.0": push_image(registry, "team/tools", "1.0", created=NOW - dt.timedelta(days=10)),
        "tools-1.1": push_image(registry, "team/tools", "1.1", created=NOW - dt.timedelta(hours=5)),
    }


@pytest.fixture(scope="module")
def registry_lab(
    tmp_path_factory: pytest.TempPathFactory, registry: Registry, pushed: dict[str, PushedImage]
) -> Iterator[Lab]:
    config = {
        "PAIConfig": {
            "image_registries": [{"url": registry.url, "kind": "oci"}],
            "image_refresh_seconds": 1.0,
        }
    }
    with run_lab(
        tmp_path_factory.mktemp("imagelab"),
        env={"JUPYTER_PAI_LOCAL_GPUS": "4", "JUPYTER_PAI_BACKEND": "local"},
        args=["--LocalBackend.stop_grace_seconds=2"],
        server_config=config,
    ) as lab:
        yield lab


def wait_images(lab: Lab, ready: Any, what: str, timeout: float = 40) -> dict[str, Any]:
    """GET images until ``ready(answer)``: the server lists registries in the background."""
    deadline = time.monotonic() + timeout
    while True:
        answer: dict[str, Any] = lab.json("images")
        if ready(answer):
            return answer
        if time.monotonic() > deadline:
            raise AssertionError(f"GET images never had {what}: {answer}")
        time.sleep(0.5)


def test_pick_a_registry_tag_see_its_details_and_submit_it(
    browser: object, registry_lab: Lab, registry: Registry, pushed: dict[str, PushedImage]
) -> None:
    lab = registry_lab
    answer = wait_images(
        lab,
        lambda a: {r["name"] for r in a.get("repositories", [])} >= {"team/pytorch", "team/tools"},
        "both repositories",
    )
    assert answer["registries"][0]["ok"] is True
    newest = pushed["2.4"]

    with open_page(browser, lab, "image-picker") as page:
        open_panel(page, "launch")
        form = page.locator(".jp-PAI-launch")
        image = form.locator("[data-path='prerequisites'] select")
        # The registry's repositories are offered beside the admin's catalogue.
        group = image.locator(f"optgroup[label='{registry.host}']")
        expect(group.locator("option")).to_have_text(["team/pytorch", "team/tools"])
        image.select_option(label="team/pytorch")

        # Picking the repository picks its newest tag; the tag select lists newest first.
        tag = form.locator("#jp-PAI-image-tag")
        expect(tag).to_have_value(newest.uri)
        expect(tag.locator("option")).to_have_text(["2.4 · 3 days ago", "2.3 · 2 months ago"])
        expect(form.get_by_label("Tag", exact=True)).to_have_value(newest.uri)
        detail = form.locator(".jp-PAI-image-detail")
        expect(detail.locator("[data-detail='age']")).to_have_text("pushed 3 days ago")
        expect(detail.locator("[data-detail='size']")).to_have_text(decimal_size(newest.size))
        expect(detail.locator("[data-detail='cuda']")).to_have_text("CUDA 12.1")
        expect(detail.locator("[data-detail='framework']")).to_have_text("pytorch 2.4.0")
        expect(detail.locator("code")).to_have_text(newest.uri)
        # The local backend cannot say which nodes hold it: no "starts without a pull".
        expect(detail.locator("[data-detail='nodes']")).to_have_count(0)
        labels = form.locator(".jp-PAI-image-labels")
        labels.locator("summary").click()
        expect(labels.locator("li")).to_contain_text(
            ["com.nvidia.cuda.version = 12.1", "org.example.team = vision"]
        )
        # A custom URI is still possible, but not shown while a tag is picked.
        expect(form.locator("#jp-PAI-image-uri")).to_have_count(0)
        expect(form.locator(".jp-PAI-registry-notices")).to_have_count(0)
        shot(page, "image-picker-1-tag-details")

        # Another tag: its own age and size.
        tag.select_option(pushed["2.3"].uri)
        expect(detail.locator("[data-detail='age']")).to_have_text("pushed 2 months ago")
        expect(detail.locator("[data-detail='size']")).to_have_text(
            decimal_size(pushed["2.3"].size)
        )
        expect(detail.locator("[data-detail='cuda']")).to_have_count(0)
        tag.select_option(newest.uri)

        name = f"ui-image-tag-{int(time.time())}"
        form.locator("[data-path='name'] input").fill(name)
        form.locator("[data-path='taskRoles.worker.commands'] textarea").fill("echo ran")
        form.locator(".jp-PAI-submit").click()
        expect(page.locator(".jp-PAI-detail-head h2")).to_have_text(name)
        job = lab.job_by_name(name)
        try:
            detail_answer = lab.job(job["id"])
            images = [
                p["uri"]
                for p in detail_answer["spec"]["prerequisites"]
                if p["type"] == "dockerimage"
            ]
            assert images == [newest.uri]
            role = next(iter(detail_answer["spec"]["taskRoles"].values()))
            assert (
                next(
                    p
                    for p in detail_answer["spec"]["prerequisites"]
                    if p["name"] == role["dockerImage"]
                )["uri"]
                == newest.uri
            )
            lab.wait_state(job["id"], "SUCCEEDED", timeout=60)
        finally:
            lab.stop(job["id"])
        shot(page, "image-picker-2-submitted")

        # A clone of the job opens on the same repository and tag, not on a typed URI.
        open_panel(page, "jobs")
        job_row(page, name).get_by_role("button", name=f"Clone {name}").click()
        expect(form.locator("[data-path='name'] input")).to_have_value(f"{name}-2")
        expect(form.locator("#jp-PAI-image-tag")).to_have_value(newest.uri)
        expect(image.locator("option:checked")).to_have_text("team/pytorch")
        expect(form.locator("#jp-PAI-image-uri")).to_have_count(0)

        # The registry goes down: the server keeps its last list and says so, in words.
        registry.stop()
        try:
            wait_images(
                lab, lambda a: a["registries"] and not a["registries"][0]["ok"], "a failed listing"
            )
            page.reload()
            page.wait_for_selector("#jp-main-dock-panel", state="attached")
            open_panel(page, "launch")
            notice = form.locator(".jp-PAI-registry-notices")
            expect(notice).to_contain_text(f"{registry.host}: ")
            expect(notice).to_contain_text("showing the list from")
            image.select_option(label="team/tools")
            expect(form.locator("#jp-PAI-image-tag")).to_have_value(pushed["tools-1.1"].uri)
            shot(page, "image-picker-3-registry-down")
        finally:
            registry.start()


def test_only_listed_images_when_the_admin_turns_custom_images_off(
    browser: object,
    tmp_path_factory: pytest.TempPathFactory,
    registry: Registry,
    pushed: dict[str, PushedImage],
) -> None:
    config = {
        "PAIConfig": {
            "image_registries": [{"url": registry.url, "kind": "oci"}],
            "custom_images": False,
        }
    }
    with run_lab(
        tmp_path_factory.mktemp("listedonly"),
        env={"JUPYTER_PAI_LOCAL_GPUS": "4", "JUPYTER_PAI_BACKEND": "local"},
        server_config=config,
    ) as lab:
        wait_images(lab, lambda a: len(a.get("repositories", [])) == 2, "both repositories")
        with open_page(browser, lab, "image-picker-listed-only") as page:
            open_panel(page, "launch")
            form = page.locator(".jp-PAI-launch")
            image = form.locator("[data-path='prerequisites'] select")
            expect(image.locator("option", has_text="team/pytorch")).to_have_count(1)
            expect(image.locator("option", has_text="Custom image URI")).to_have_count(0)

            # A URI typed in the YAML that no list has: no URI input, a hint in words.
            form.locator("[data-path='name'] input").fill("listed-only")
            form.get_by_role("button", name="Edit as YAML").click()
            area = form.locator("#jp-PAI-yaml-text")
            text = area.input_value()
            uri = next(line for line in text.splitlines() if "uri:" in line).split("uri:")[1]
            area.fill(text.replace(uri, " ubuntu:24.04"))
            form.get_by_role("button", name="Form", exact=True).click()
            expect(form.locator("#jp-PAI-image-uri")).to_have_count(0)
            expect(image.locator("option:checked")).to_have_text("ubuntu:24.04 (not listed)")
            expect(form.locator(".jp-PAI-image-unlisted")).to_have_text(
                "ubuntu:24.04 is not listed: the admin allows only the listed images; pick one."
            )
            shot(page, "image-picker-4-listed-only")

            # Picking a listed tag clears the hint.
            image.select_option(label="team/tools")
            expect(form.locator("#jp-PAI-image-tag")).to_have_value(pushed["tools-1.1"].uri)
            expect(form.locator(".jp-PAI-image-unlisted")).to_have_count(0)
