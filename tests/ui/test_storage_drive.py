"""The storage ``work`` as a JupyterLab drive: its own file browser ``work:``, a CSV opened
in JupyterLab's CSV viewer, a text file edited and saved back through the REST API, a new
folder and a delete from JupyterLab's file browser."""

from __future__ import annotations

import base64
import json
import time
from typing import Any

from playwright.sync_api import expect

from .conftest import Lab, shot

# A 1x1 PNG.
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="


def wait_for(check: Any, what: str, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.2)


def item(browser: Any, name: str) -> Any:
    return browser.locator(".jp-DirListing-item").filter(
        has=browser.page.locator(".jp-DirListing-itemText", has_text=name)
    )


def test_work_drive_open_edit_save_delete(page: Any, lab: Lab) -> None:
    root = lab.root_dir
    # Uploaded through the REST API the panel uses (a PUT of the whole file).
    lab.api(
        "storage/work/sheet.csv",
        method="PUT",
        body=b"city,gpus\nOslo,8\nLima,4\n",
        content_type="application/octet-stream",
    )
    (root / "notes.txt").write_text("first line\n")

    page.locator('.jp-SideBar [data-id="jp-PAI-drive-work"]').click()
    browser = page.locator("#jp-PAI-drive-work")
    expect(browser).to_be_visible()
    tab = page.locator('.jp-SideBar [data-id="jp-PAI-drive-work"]')
    expect(tab).to_have_attribute("title", "Storage work")
    # Written while the browser was open: shown after its refresh button.
    browser.locator('.jp-ToolbarButtonComponent[title="Refresh the file list"]').click()
    expect(item(browser, "sheet.csv")).to_be_visible()
    expect(item(browser, "data")).to_have_attribute("data-isdir", "true")
    shot(page, "storage-drive-1-browser")

    # The CSV in JupyterLab's own viewer.
    item(browser, "sheet.csv").dblclick()
    viewer = page.locator("#jp-main-dock-panel .jp-CSVViewer")
    expect(viewer).to_be_visible()
    expect(
        page.locator(".lm-DockPanel-tabBar .lm-TabBar-tab", has_text="sheet.csv")
    ).to_be_visible()
    page.wait_for_timeout(500)  # the grid paints on a canvas
    shot(page, "storage-drive-2-csv")

    # A text file in the editor: edit, save, the bytes on disk change.
    item(browser, "notes.txt").dblclick()
    editor = page.locator("#jp-main-dock-panel .jp-FileEditor:visible .cm-content")
    expect(editor).to_contain_text("first line")
    editor.click()
    page.keyboard.press("Control+End")
    page.keyboard.type("saved from JupyterLab")
    page.keyboard.press("Control+s")
    wait_for(
        lambda: (root / "notes.txt").read_text() == "first line\nsaved from JupyterLab",
        "notes.txt saved through the drive",
    )
    # Saving again (no "file changed on disk" dialog: the drive keeps the server's time).
    page.keyboard.type("!")
    page.keyboard.press("Control+s")
    wait_for(lambda: (root / "notes.txt").read_text().endswith("JupyterLab!"), "second save")
    expect(page.locator(".jp-Dialog")).to_have_count(0)
    shot(page, "storage-drive-3-saved")

    # Delete from the file browser, confirmed in JupyterLab's dialog.
    page.locator(
        "#jp-main-dock-panel .lm-TabBar-tab.lm-mod-current .lm-TabBar-tabCloseIcon"
    ).click()
    item(browser, "notes.txt").click(button="right")
    # JupyterLab 4.5 calls its delete "Move to Trash"; the drive deletes for good.
    page.locator(".lm-Menu-itemLabel", has_text="Move to Trash").click()
    dialog = page.locator(".jp-Dialog")
    expect(dialog).to_contain_text("notes.txt")
    shot(page, "storage-drive-4-confirm")
    dialog.locator("button.jp-mod-accept").click()
    wait_for(lambda: not (root / "notes.txt").exists(), "notes.txt deleted")
    expect(item(browser, "notes.txt")).to_have_count(0)
    shot(page, "storage-drive-5-deleted")


def test_drag_from_work_drive_to_server_browser_copies(page: Any, lab: Lab) -> None:
    root = lab.root_dir
    lab.api(
        "storage/work/moved.csv",
        method="PUT",
        body=b"x,y\n1,2\n",
        content_type="application/octet-stream",
    )
    # The drive's browser to the right sidebar, JupyterLab's own on the left: both shown.
    tab = page.locator('.jp-SideBar [data-id="jp-PAI-drive-work"]')
    tab.click(button="right")
    page.locator(".lm-Menu-itemLabel", has_text="Switch Sidebar Side").click()
    drive = page.locator("#jp-PAI-drive-work")
    page.wait_for_timeout(300)
    if not drive.is_visible():
        page.locator('.jp-SideBar.jp-mod-right [data-id="jp-PAI-drive-work"]').click()
    drive.locator('.jp-ToolbarButtonComponent[title="Refresh the file list"]').click()
    server = page.locator("#filebrowser")
    if not server.is_visible():
        page.locator('.jp-SideBar.jp-mod-left [data-id="filebrowser"]').click()
    source, target = item(drive, "moved.csv"), item(server, "data")
    expect(source).to_be_visible()
    expect(target).to_be_visible()

    start, end = source.bounding_box(), target.bounding_box()
    page.mouse.move(start["x"] + 20, start["y"] + start["height"] / 2)
    page.mouse.down()
    for step in range(1, 11):
        page.mouse.move(
            start["x"] + 20 + (end["x"] + 30 - start["x"] - 20) * step / 10,
            start["y"] + (end["y"] - start["y"]) * step / 10 + end["height"] / 2,
        )
    page.mouse.up()
    wait_for(lambda: (root / "data" / "moved.csv").exists(), "moved.csv copied into data")
    assert (root / "data" / "moved.csv").read_bytes() == b"x,y\n1,2\n"
    assert (root / "moved.csv").exists(), "a copy across drives leaves the source"
    shot(page, "storage-drive-6-dragged")
    for left in (root / "data" / "moved.csv", root / "moved.csv", root / "sheet.csv"):
        left.unlink(missing_ok=True)


def test_work_drive_opens_notebook_and_image(page: Any, lab: Lab) -> None:
    root = lab.root_dir
    notebook = {
        "cells": [
            {
                "cell_type": "markdown",
                "id": "m1",
                "metadata": {},
                "source": ["# Results from the work storage"],
            }
        ],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    (root / "report.ipynb").write_text(json.dumps(notebook))
    (root / "dot.png").write_bytes(base64.b64decode(PNG))

    tab = page.locator('.jp-SideBar [data-id="jp-PAI-drive-work"]')
    tab.click()
    browser = page.locator("#jp-PAI-drive-work")
    browser.locator('.jp-ToolbarButtonComponent[title="Refresh the file list"]').click()

    item(browser, "dot.png").dblclick()
    image = page.locator("#jp-main-dock-panel .jp-ImageViewer img")
    expect(image).to_be_visible()
    assert image.evaluate("i => i.complete && i.naturalWidth") == 1

    item(browser, "report.ipynb").dblclick()
    panel = page.locator("#jp-main-dock-panel .jp-NotebookPanel:visible")
    expect(panel.locator(".jp-MarkdownOutput h1")).to_contain_text("Results from the work storage")
    kernel_dialog = page.locator(".jp-Dialog")
    if kernel_dialog.count():
        kernel_dialog.locator("button.jp-mod-reject").click()
    shot(page, "storage-drive-7-notebook")
    # Saved back through the drive as a notebook JSON document.
    panel.locator(".jp-Notebook").click()
    page.keyboard.press("Control+s")
    wait_for(
        lambda: json.loads((root / "report.ipynb").read_text()).get("metadata") != {},
        "report.ipynb saved by JupyterLab",
    )
    saved = json.loads((root / "report.ipynb").read_text())
    assert saved["nbformat"] == 4
    assert saved["cells"][0]["source"] in (
        "# Results from the work storage",
        ["# Results from the work storage"],
    )
    for left in (root / "report.ipynb", root / "dot.png"):
        left.unlink(missing_ok=True)
