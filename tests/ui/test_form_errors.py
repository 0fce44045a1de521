"""Errors next to what is wrong: the YAML editor validates as it is typed, and
a value only the server rejects (400) comes back next to its form field."""

from __future__ import annotations

import re
import time

from playwright.sync_api import expect

from .conftest import Lab, open_panel, shot


def test_yaml_editor_shows_field_errors(page, lab: Lab) -> None:
    open_panel(page, "launch")
    form = page.locator(".jp-PAI-launch")
    form.locator("[data-path='name'] input").fill("yaml-job")
    form.locator("[data-path='taskRoles.worker.commands'] textarea").fill("echo hi")
    form.get_by_role("button", name="Edit as YAML").click()

    area = form.locator("#jp-PAI-yaml-text")
    expect(area).to_have_value(re.compile(r"name: yaml-job"))
    errors = form.locator("#jp-PAI-yaml-errors")
    expect(errors).to_have_text("Valid protocol v2 job.")

    text = area.input_value()
    assert re.search(r"gpu: \d+", text), text
    area.fill(re.sub(r"gpu: \d+", "gpu: -1", text).replace("name: yaml-job", "name: bad name!"))
    expect(area).to_have_attribute("aria-invalid", "true")
    items = errors.locator("li")
    expect(items.filter(has_text="taskRoles.worker.resourcePerInstance.gpu")).to_have_count(1)
    expect(items.filter(has=page.locator("code", has_text=re.compile("^name$")))).to_have_count(1)
    # Each error names its line, and the button selects that line.
    gpu_error = items.filter(has_text="resourcePerInstance.gpu")
    line_button = gpu_error.get_by_role("button", name=re.compile(r"^line \d+$"))
    line_button.click()
    line = int(line_button.inner_text().split()[1])
    selected = area.evaluate("a => a.value.slice(a.selectionStart, a.selectionEnd)")
    assert "gpu: -1" in selected, (line, selected)
    shot(page, "form-errors-1-yaml")

    # Submitting invalid YAML sends nothing.
    before = len(lab.json("jobs")["items"])
    form.locator(".jp-PAI-submit").click()
    expect(form.locator(".jp-PAI-error")).to_contain_text("The YAML has problems")
    assert len(lab.json("jobs")["items"]) == before

    # Fixed, it is valid again.
    area.fill(area.input_value().replace("gpu: -1", "gpu: 0").replace("bad name!", "yaml-ok"))
    expect(errors).to_have_text("Valid protocol v2 job.")
    expect(area).to_have_attribute("aria-invalid", "false")
    form.get_by_role("button", name="New").click()


def test_server_400_shown_next_to_the_field(page, jobs: Lab) -> None:
    open_panel(page, "launch")
    form = page.locator(".jp-PAI-launch")
    form.get_by_role("button", name="New").click()
    # A new form has the listed VC and image at once (not only after the next refresh).
    expect(form.locator("[data-path='defaults.virtualCluster'] select")).to_have_value("default")
    expect(form.locator("[data-path='prerequisites'] select")).not_to_have_value("__custom__")
    expect(form.locator("#jp-PAI-image-uri")).to_have_count(0)
    name = f"ui-bad-{int(time.time())}"
    form.locator("[data-path='name'] input").fill(name)
    # The form checks that a mount path is absolute; only the server also refuses one that
    # climbs out of the mount with '..' (a 400 at extras.storages.0.mountPath).
    form.get_by_role("button", name="+ Mount a storage").click()
    mount = form.locator("[data-path='extras.storages.0']")
    mount_path = form.get_by_label("mount path of storage 1")
    mount_path.fill("/mnt/../etc")
    command = form.locator("[data-path='taskRoles.worker.commands'] textarea")
    command.fill("echo mounted")
    form.locator(".jp-PAI-submit").click()

    expect(mount).to_have_class(re.compile("jp-mod-invalid"))
    expect(mount.locator(".jp-PAI-field-errors")).to_contain_text("must not contain '..'")
    # The first control of the invalid field has the focus.
    expect(form.get_by_label("storage 1", exact=True)).to_be_focused()
    expect(form.locator(".jp-PAI-error[role='alert']").first).to_be_visible()
    shot(page, "form-errors-2-server-400")
    assert not [j for j in jobs.json("jobs")["items"] if j["name"] == name]

    # Editing the field clears the stale server error; with a clean path it submits.
    mount_path.fill("/mnt/data")
    expect(mount.locator(".jp-PAI-field-errors")).to_have_count(0)
    form.locator(".jp-PAI-submit").click()
    expect(page.locator(".jp-PAI-detail-head h2")).to_have_text(name)
    jobs.submitted.append(jobs.job_by_name(name)["id"])
