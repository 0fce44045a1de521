"""The storage browser writes: upload files (button) and files and a folder (drop), with
progress; new folder, rename, delete with confirmation, download a folder as a zip; a
read-only storage offers none of the writes."""

from __future__ import annotations

import io
import os
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from .conftest import Lab, open_panel, run_lab, shot

BIG = 9 * 1024 * 1024 + 123  # two pieces of at most 8 MiB

# A drop as Chromium delivers one from the desktop: items whose webkitGetAsEntry() gives
# file and folder entries (a page cannot build folder entries with a real DataTransfer).
DROP = """([files, folder]) => {
  const file = (name, text, dir) => ({
    isFile: true, isDirectory: false, name, fullPath: `${dir}/${name}`,
    file: ok => ok(new File([text], name))
  });
  const dir = (name, children, parent) => {
    const path = `${parent}/${name}`;
    return {
      isFile: false, isDirectory: true, name, fullPath: path,
      createReader() {
        let given = false;  // readEntries answers in batches, then an empty one
        return { readEntries(ok) { ok(given ? [] : ((given = true), children(path))); } };
      }
    };
  };
  const top = dir(folder, p => [
    file('inner.txt', 'inside the folder\\n', p),
    dir('deep', q => [file('deeper.txt', 'deeper\\n', q)], p)
  ], '');
  const entries = [...files.map(([n, t]) => file(n, t, '')), top];
  const data = {
    types: ['Files'], files: [],
    items: entries.map(e => ({ kind: 'file', webkitGetAsEntry: () => e, getAsFile: () => null }))
  };
  const target = document.querySelector('#jp-PAI-section-storage .jp-PAI-storage');
  for (const type of ['dragover', 'drop']) {
    const event = new Event(type, { bubbles: true, cancelable: true });
    Object.defineProperty(event, 'dataTransfer', { value: data });
    target.dispatchEvent(event);
  }
}"""


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    """A lab with the writable storage ``work`` and the read-only storage ``shared``."""
    base = tmp_path_factory.mktemp("lab-writes")
    shared = base / "shared"
    shared.mkdir()
    (shared / "keep.txt").write_text("read me only\n")
    storages = {
        "work": {"path": str(base / "work"), "mountPath": "/mnt/work"},
        "shared": {"path": str(shared), "mountPath": "/mnt/shared", "readOnly": True},
    }
    with run_lab(
        base,
        env={"JUPYTER_PAI_BACKEND": "local"},
        server_config={"LocalBackend": {"storages_config": storages}},
    ) as started:
        yield started


def dialog_answer(page: Any, text: str | None, button: str) -> None:
    dialog = page.locator(".jp-Dialog")
    expect(dialog).to_be_visible()
    if text is not None:
        dialog.locator("input").fill(text)
    dialog.get_by_role("button", name=button, exact=True).click()
    expect(dialog).to_have_count(0)


def test_upload_drop_folder_rename_delete_download(page: Any, lab: Lab) -> None:
    root: Path = lab.root_dir
    open_panel(page, "storage")
    section = page.locator("#jp-PAI-section-storage")
    section.get_by_label("Storage", exact=True).select_option("work")
    listing = section.get_by_label("Files in work/")
    expect(listing).to_contain_text("data")

    # The Upload button: two files, one in two pieces.
    big = bytes(range(256)) * (BIG // 256) + b"x" * (BIG % 256)
    section.locator(".jp-PAI-upload-input").set_input_files(
        [
            {"name": "big.bin", "mimeType": "application/octet-stream", "buffer": big},
            {"name": "table.csv", "mimeType": "text/csv", "buffer": b"a,b\n1,2\n"},
        ]
    )
    uploads = section.get_by_label("Uploads")
    expect(uploads.locator(".jp-PAI-upload-summary")).to_have_text(
        "Uploaded 2 of 2 files, 9.0 MiB of 9.0 MiB", timeout=60_000
    )
    expect(uploads.locator(".jp-PAI-upload-done")).to_have_count(2)
    assert uploads.get_by_label("All uploads").evaluate("e => e.value") == 1
    shot(page, "storage-upload-1-button")
    assert (root / "big.bin").read_bytes() == big
    assert (root / "table.csv").read_bytes() == b"a,b\n1,2\n"
    expect(listing).to_contain_text("big.bin")

    # A drop of two files and a folder (with a folder inside).
    page.evaluate(DROP, [[["one.txt", "first\n"], ["two.txt", "second\n"]], "folder"])
    expect(uploads.locator(".jp-PAI-upload-summary")).to_contain_text(
        "Uploaded 4 of 4 files", timeout=30_000
    )
    expect(uploads.locator('[data-path="folder/deep/deeper.txt"]')).to_contain_text("done")
    assert (root / "one.txt").read_text() == "first\n"
    assert (root / "two.txt").read_text() == "second\n"
    assert (root / "folder" / "inner.txt").read_text() == "inside the folder\n"
    assert (root / "folder" / "deep" / "deeper.txt").read_text() == "deeper\n"
    expect(listing.locator(".jp-PAI-entry-directory", has_text="folder")).to_be_visible()
    shot(page, "storage-upload-2-drop")
    uploads.get_by_role("button", name="Close").click()

    # New folder.
    section.get_by_role("button", name="New folder").click()
    dialog_answer(page, "made here", "Ok")
    expect(listing.locator(".jp-PAI-entry-directory", has_text="made here")).to_be_visible()
    assert (root / "made here").is_dir()

    # Rename.
    listing.get_by_role("button", name="Rename two.txt").click()
    dialog_answer(page, "second.txt", "Ok")
    expect(listing.locator(".jp-PAI-entry-file", has_text="second.txt")).to_be_visible()
    assert (root / "second.txt").read_text() == "second\n" and not (root / "two.txt").exists()
    shot(page, "storage-upload-3-renamed")

    # A refused write is said in the server's words.
    listing.get_by_role("button", name="Rename second.txt").click()
    dialog_answer(page, "table.csv", "Ok")
    expect(section.get_by_role("alert")).to_contain_text("table.csv")
    shot(page, "storage-upload-3b-refused")
    assert (root / "second.txt").exists() and (root / "table.csv").read_bytes() == b"a,b\n1,2\n"

    # Delete a file: asked first; Cancel keeps it.
    listing.get_by_role("button", name="Delete one.txt").click()
    expect(page.locator(".jp-Dialog")).to_contain_text(
        "Delete work/one.txt? This cannot be undone."
    )
    dialog_answer(page, None, "Cancel")
    assert (root / "one.txt").exists()
    listing.get_by_role("button", name="Delete one.txt").click()
    dialog_answer(page, None, "Delete")
    expect(listing.locator(".jp-PAI-entry-file", has_text="one.txt")).to_have_count(0)
    assert not (root / "one.txt").exists()

    # Download a folder as a zip, then delete it with everything in it.
    listing.locator(".jp-PAI-entry-directory .jp-PAI-entry-name", has_text="folder").click()
    expect(section.get_by_label("Files in work/folder")).to_contain_text("inner.txt")
    link = section.get_by_role("link", name="Download folder")
    assert "archive=zip" in (link.get_attribute("href") or "")
    with page.expect_download() as info:
        link.click()
    archive = zipfile.ZipFile(io.BytesIO(Path(info.value.path()).read_bytes()))
    names = sorted(n.rstrip("/") for n in archive.namelist())
    assert "inner.txt" in " ".join(names) and "deeper.txt" in " ".join(names), names
    section.locator(".jp-PAI-breadcrumbs").get_by_role("button", name="work").click()
    listing.get_by_role("button", name="Delete folder").click()
    expect(page.locator(".jp-Dialog")).to_contain_text("and everything in it")
    shot(page, "storage-upload-4-delete-folder")
    dialog_answer(page, None, "Delete")
    expect(listing.locator(".jp-PAI-entry-directory", has_text="folder")).to_have_count(0)
    assert not (root / "folder").exists()


def test_read_only_storage_offers_no_writes(page: Any, lab: Lab) -> None:
    open_panel(page, "storage")
    section = page.locator("#jp-PAI-section-storage")
    section.get_by_label("Storage", exact=True).select_option("shared")
    expect(section.get_by_label("Files in shared/")).to_contain_text("keep.txt")
    expect(section.get_by_text("read-only: browse and download")).to_be_visible()
    for name in ("Upload", "New folder", "Rename keep.txt", "Delete keep.txt"):
        expect(section.get_by_role("button", name=name)).to_have_count(0)
    expect(section.get_by_role("link", name="Download folder")).to_be_visible()
    shot(page, "storage-upload-5-read-only")


def test_upload_progress_and_cancel(page: Any, lab: Lab) -> None:
    """A slow link: the bar moves while a piece is on its way; Cancel stops the upload,
    nothing appears under the file's name and what arrived is discarded."""
    root: Path = lab.root_dir
    open_panel(page, "storage")
    section = page.locator("#jp-PAI-section-storage")
    section.get_by_label("Storage", exact=True).select_option("work")
    cdp = page.context.new_cdp_session(page)
    cdp.send("Network.enable")
    cdp.send(
        "Network.emulateNetworkConditions",
        {"offline": False, "latency": 0, "downloadThroughput": -1, "uploadThroughput": 1 << 20},
    )
    section.locator(".jp-PAI-upload-input").set_input_files(
        [{"name": "slow.bin", "mimeType": "application/octet-stream", "buffer": b"s" * BIG}]
    )
    uploads = section.get_by_label("Uploads")
    bar = uploads.get_by_label("Upload of slow.bin")
    page.wait_for_function(
        "e => e.value > 0.05 && e.value < 0.9", arg=bar.element_handle(), timeout=30_000
    )
    expect(uploads.locator(".jp-PAI-upload-summary")).to_contain_text("Uploading 0 of 1 files")
    shot(page, "storage-upload-6-progress")
    uploads.get_by_role("button", name="Cancel").click()
    expect(uploads.locator('[data-path="slow.bin"]')).to_contain_text("cancelled")
    cdp.send(
        "Network.emulateNetworkConditions",
        {"offline": False, "latency": 0, "downloadThroughput": -1, "uploadThroughput": -1},
    )
    assert not (root / "slow.bin").exists()
    expect(section.get_by_label("Files in work/")).not_to_contain_text("slow.bin")
    # What arrived of it is discarded, not left hidden in the storage.
    deadline = time.monotonic() + 10
    while [n for n in os.listdir(root) if n.endswith(".pai-upload")]:
        assert time.monotonic() < deadline, os.listdir(root)
        time.sleep(0.2)
