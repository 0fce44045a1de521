"""What a storage's files can do on the Jupyter origin, in Chromium. A notebook planted in
the ``work`` storage whose cells say they are trusted opens from the ``work:`` drive with its
HTML output sanitised: its script and its ``onerror`` never run. Once the user trusts it and
saves, the server's notary signs it, and it opens trusted again. An HTML file of a storage,
opened in a tab, can neither refresh the page elsewhere nor send a form."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.notebooks import claiming_trust

from .conftest import Lab, run_lab, shot
from .test_storage_drive import wait_for

# Each sets a marker, and says so on the page for the screenshots.
HTML = (
    '<b class="pai-html-output">html output</b>'
    "<script>window.__pai_marker = 'script';"
    " document.querySelectorAll('.pai-html-output').forEach(b => b.append(' (script ran)'))"
    "</script>"
    '<img src="no-such-image.png" alt="image"'
    " onerror=\"window.__pai_marker_img = 'img'; this.alt = 'onerror ran'\">"
)
MARKERS = "() => [window.__pai_marker ?? null, window.__pai_marker_img ?? null]"


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    """A lab of this module's own, with a notary (secret and signatures) of its own: the
    signatures this test makes stay out of the user's Jupyter data folder."""
    base = tmp_path_factory.mktemp("lab-trust")
    (base / "notary").mkdir()
    with run_lab(
        base,
        env={"JUPYTER_PAI_BACKEND": "local"},
        args=[f"--NotebookNotary.data_dir={base / 'notary'}"],
    ) as started:
        yield started


def planted() -> dict[str, Any]:
    return claiming_trust(
        {"text/html": HTML, "text/plain": "<HTML>"}, "from IPython.display import HTML"
    )


def open_from_drive(page: Any, name: str) -> Any:
    """Double-click ``name`` in the ``work:`` drive's browser; the notebook panel, with no
    kernel chosen."""
    page.locator('.jp-SideBar [data-id="jp-PAI-drive-work"]').click()
    browser = page.locator("#jp-PAI-drive-work")
    browser.locator('.jp-ToolbarButtonComponent[title="Refresh the file list"]').click()
    browser.locator(".jp-DirListing-item").filter(
        has=page.locator(".jp-DirListing-itemText", has_text=name)
    ).dblclick()
    panel = page.locator("#jp-main-dock-panel .jp-NotebookPanel:visible")
    expect(panel.locator(".jp-OutputArea-output")).to_contain_text("html output")
    # The notebook names no kernel: JupyterLab asks for one, always (answered before any
    # other dialog, so no later click lands on it).
    dialog = page.locator(".jp-Dialog")
    expect(dialog).to_contain_text("Select Kernel")
    dialog.locator("button.jp-mod-reject").click()
    expect(dialog).to_have_count(0)
    return panel


def test_planted_notebook_opens_untrusted_until_the_user_trusts_it(page: Any, lab: Lab) -> None:
    root: Path = lab.root_dir
    (root / "planted.ipynb").write_text(json.dumps(planted()))

    panel = open_from_drive(page, "planted.ipynb")
    page.wait_for_timeout(1500)  # a script or an image error would have run by now
    assert page.evaluate(MARKERS) == [None, None]
    # Shown, sanitised: the text is there, the script and the handler are not.
    output = panel.locator(".jp-OutputArea-output")
    expect(output.locator("b", has_text="html output")).to_be_visible()
    assert output.locator("script").count() == 0
    assert output.locator("img[onerror]").count() == 0
    shot(page, "storage-trust-1-planted-untrusted")

    # The marker is real: trusting the notebook runs the script (the user said so).
    panel.locator(".jp-Notebook").click()
    page.keyboard.press("Control+Shift+C")
    palette = page.locator(".lm-CommandPalette-input")
    palette.fill("Trust Notebook")
    page.locator(".lm-CommandPalette-item", has_text="Trust Notebook").first.click()
    page.locator(".jp-Dialog button.jp-mod-accept").click()
    wait_for(lambda: page.evaluate(MARKERS)[0] == "script", "the trusted output's script")
    shot(page, "storage-trust-2-trusted-by-user")

    # Saved: no `trusted` in the file, and the server's notary signed it.
    panel.locator(".jp-Notebook").click()
    page.keyboard.press("Control+s")
    wait_for(
        lambda: "trusted" not in (root / "planted.ipynb").read_text(),
        "planted.ipynb saved by JupyterLab without its cells' trusted",
    )
    opened = lab.json("storage/work/planted.ipynb?notebook=1")
    assert opened["cells"][0]["metadata"]["trusted"] is True

    # Opened again in a fresh page (no tab restored): trusted, by the server's signature,
    # not by the file.
    page.goto(f"{lab.url}lab?reset&token={lab.token}")
    page.wait_for_selector("#jp-main-dock-panel", state="attached")
    assert page.evaluate(MARKERS) == [None, None]
    open_from_drive(page, "planted.ipynb")
    wait_for(lambda: page.evaluate(MARKERS)[0] == "script", "the signed notebook's script")
    shot(page, "storage-trust-3-signed-reopened")
    (root / "planted.ipynb").unlink()


def test_storage_html_page_can_neither_refresh_nor_post(page: Any, lab: Lab) -> None:
    root: Path = lab.root_dir
    (root / "page.html").write_text(
        "<!doctype html><html><head>"
        '<meta http-equiv="refresh" content="0;url=?refreshed=1">'
        "</head><body><p>a storage page</p>"
        '<form method="post" action="?posted=1"><button id="send">send</button></form>'
        "</body></html>"
    )
    url = f"{lab.url}pai/api/storage/work/page.html?token={lab.token}"
    page.goto(url)
    expect(page.locator("p")).to_have_text("a storage page")
    page.wait_for_timeout(1500)  # a refresh of 0 s would have left by now
    assert page.url == url
    page.locator("#send").click()
    page.wait_for_timeout(1000)
    assert page.url == url
    expect(page.locator("p")).to_have_text("a storage page")
    shot(page, "storage-trust-4-html-sandboxed")
    (root / "page.html").unlink()
