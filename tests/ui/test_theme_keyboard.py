"""The panel in JupyterLab's light and dark themes, and its controls reached
with the keyboard alone."""

from __future__ import annotations

import json
import re
import time
import urllib.request
from collections.abc import Iterator

import pytest
from playwright.sync_api import expect

from .conftest import Lab, job_row, open_panel, shot

THEMES = "lab/api/settings/@jupyterlab/apputils-extension:themes"


def set_theme_setting(lab: Lab, theme: str) -> None:
    request = urllib.request.Request(
        f"{lab.url}{THEMES}",
        data=json.dumps({"raw": json.dumps({"theme": theme})}).encode(),
        method="PUT",
        headers={"Authorization": f"token {lab.token}", "Content-Type": "application/json"},
    )
    urllib.request.urlopen(request, timeout=30).close()


@pytest.fixture
def light_afterwards(lab: Lab) -> Iterator[None]:
    """The theme is a user setting: the next test's page must open light again."""
    yield
    set_theme_setting(lab, "JupyterLab Light")


def choose_theme(page, theme: str) -> None:
    page.locator(".lm-MenuBar-item", has_text="Settings").click()
    label = page.locator(".lm-Menu-itemLabel", has_text=re.compile("^Theme$"))
    page.locator(".lm-Menu-item", has=label).hover()
    page.locator(".lm-Menu-item", has_text=re.compile(f"^{re.escape(theme)}$")).click()
    expect(page.locator("body")).to_have_attribute("data-jp-theme-name", theme)
    # JupyterLab shows its splash screen while it loads the theme.
    splash = page.locator("#jupyterlab-splash")
    expect(splash).to_have_count(0, timeout=15_000)
    # No animation of the splash or the theme's colours left when the screenshot is taken.
    page.wait_for_function("() => document.getAnimations().length === 0", timeout=15_000)


def test_light_and_dark_theme(page, jobs: Lab, light_afterwards: None) -> None:
    stamp = int(time.time())
    jobs.submit(f"ui-theme-running-{stamp}", "sleep 300", gpu=1)
    done = jobs.submit(f"ui-theme-done-{stamp}", "echo done")
    jobs.wait_state(done["id"], "SUCCEEDED", timeout=30)

    body = page.locator("body")
    expect(body).to_have_attribute("data-jp-theme-light", "true")
    open_panel(page, "jobs")
    expect(job_row(page, f"ui-theme-running-{stamp}").locator(".jp-PAI-col-state")).to_have_text(
        "RUNNING"
    )
    shot(page, "theme-1-light-jobs")

    choose_theme(page, "JupyterLab Dark")
    expect(body).to_have_attribute("data-jp-theme-light", "false")
    expect(body).to_have_attribute("data-jp-theme-name", "JupyterLab Dark")
    panel = page.locator("#jupyter-pai-panel")
    # The panel follows the theme: its background is dark, its text light.
    colours = panel.evaluate(
        """el => {
          const rgb = c => c.match(/\\d+/g).slice(0, 3).map(Number);
          const lum = c => rgb(c).reduce((a, b) => a + b, 0) / 3;
          const s = getComputedStyle(el);
          const name = el.querySelector('.jp-PAI-job-name');
          return {bg: lum(s.backgroundColor), fg: lum(getComputedStyle(name).color),
                  title: lum(getComputedStyle(el.querySelector('.jp-PAI-title')).color)};
        }"""
    )
    assert colours["bg"] < 100 and colours["title"] > 150, colours
    assert colours["fg"] > colours["bg"] + 60, colours
    shot(page, "theme-2-dark-jobs")
    open_panel(page, "launch")
    shot(page, "theme-3-dark-launch")
    open_panel(page, "cluster")
    shot(page, "theme-4-dark-cluster")

    choose_theme(page, "JupyterLab Light")
    expect(body).to_have_attribute("data-jp-theme-light", "true")


def describe_focus(page) -> dict[str, str | bool | None]:
    result: dict[str, str | bool | None] = page.evaluate(
        """() => {
          const el = document.activeElement;
          const label = el.labels && el.labels.length ? el.labels[0].textContent : null;
          return {
            tag: el.tagName.toLowerCase(),
            text: (label || el.getAttribute('aria-label') || el.textContent || '').trim(),
            path: el.closest('[data-path]')?.dataset.path ?? null,
            inForm: !!el.closest('.jp-PAI-launch'),
            inPanel: !!el.closest('#jupyter-pai-panel'),
          };
        }"""
    )
    return result


def test_keyboard_reaches_the_panel_controls(page, lab: Lab) -> None:
    # JupyterLab focuses its launcher once it has started: click after that.
    page.locator(".jp-Launcher").wait_for()
    open_panel(page, "launch")
    tab = page.locator("#jp-PAI-tab-launch")
    tab.click()
    expect(tab).to_be_focused()
    # The section tabs: arrow keys move between them (one tab stop for the list).
    page.keyboard.press("ArrowRight")
    expect(page.locator("#jp-PAI-tab-jobs")).to_be_focused()
    expect(page.locator("#jp-PAI-tab-jobs")).to_have_attribute("aria-selected", "true")
    page.keyboard.press("End")
    expect(page.locator("#jp-PAI-tab-cluster")).to_be_focused()
    page.keyboard.press("Home")
    expect(tab).to_be_focused()
    expect(tab).to_have_attribute("aria-selected", "true")

    # Tab goes from the tab list into the launch form, then through its fields in order.
    seen: list[dict[str, str | bool | None]] = []
    for _ in range(80):
        page.keyboard.press("Tab")
        focus = describe_focus(page)
        seen.append(focus)
        if focus["tag"] == "button" and focus["text"] == "Submit job":
            break
    assert seen[0]["inForm"], seen[0]
    assert all(f["inForm"] for f in seen), [f for f in seen if not f["inForm"]]
    assert seen[-1]["text"] == "Submit job", seen[-5:]
    paths = [f["path"] for f in seen]
    order = [
        "name",
        "defaults.virtualCluster",
        "prerequisites",
        "taskRoles.worker.instances",
        "taskRoles.worker.resourcePerInstance.gpu",
        "taskRoles.worker.commands",
    ]
    positions = [paths.index(p) for p in order]
    assert positions == sorted(positions), list(zip(order, positions, strict=True))

    # Typing where the focus is: back to the job name with Shift+Tab, then type.
    while describe_focus(page)["path"] != "name":
        page.keyboard.press("Shift+Tab")
    page.keyboard.press("Control+a")
    page.keyboard.type("typed-by-keyboard")
    expect(page.locator(".jp-PAI-launch [data-path='name'] input")).to_have_value(
        "typed-by-keyboard"
    )
    expect(page.locator(".jp-PAI-launch [data-path='name'] input")).to_be_focused()
    shot(page, "keyboard-focus-in-form")
