"""Browse the storage `work`: open the folder data and preview readme.txt."""

from __future__ import annotations

from playwright.sync_api import expect

from .conftest import Lab, open_panel, shot


def test_browse_storage_and_preview(page, lab: Lab) -> None:
    open_panel(page, "storage")
    section = page.locator("#jp-PAI-section-storage")
    picker = section.get_by_label("Storage", exact=True)
    picker.select_option("work")
    expect(picker).to_have_value("work")

    section.locator(".jp-PAI-entry-directory .jp-PAI-entry-name", has_text="data").click()
    crumbs = section.locator(".jp-PAI-breadcrumbs")
    expect(crumbs.get_by_role("button", name="data")).to_be_visible()
    listing = section.get_by_label("Files in work/data")
    readme = listing.locator(".jp-PAI-entry-file", has_text="readme.txt")
    expect(readme).to_contain_text("28 B")
    shot(page, "storage-1-folder")

    readme.locator(".jp-PAI-entry-name").click()
    preview = section.get_by_label("Preview of data/readme.txt")
    expect(preview.locator(".jp-PAI-preview-text")).to_have_text("hello from the work storage\n")
    shot(page, "storage-2-preview")

    preview.get_by_role("button", name="Close preview").click()
    expect(preview).to_have_count(0)
    crumbs.get_by_role("button", name="work").click()
    expect(section.get_by_label("Files in work/")).to_contain_text("data")
