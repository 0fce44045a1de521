"""A `.yaml` job file in the file browser opens straight into the launch form."""

from __future__ import annotations

import time

from playwright.sync_api import expect

from .conftest import Lab, shot

JOB = """protocolVersion: 2
name: {name}
type: job
prerequisites:
  - {{type: dockerimage, name: img, uri: 'pytorch/pytorch:2.4.0-cuda12.1-cudnn9-runtime'}}
taskRoles:
  trainer:
    instances: 3
    dockerImage: img
    resourcePerInstance: {{cpu: 2, memoryMB: 4096, gpu: 1}}
    commands: ['python train.py --epochs 3']
"""


def show_file(page, name: str):
    """Reload so the file browser lists a file written meanwhile; return its item."""
    page.reload()
    page.wait_for_selector("#jp-main-dock-panel", state="attached")
    item = page.locator(".jp-DirListing-item", has_text=name)
    # The restored layout may show another side panel a moment after the page loads.
    for _ in range(3):
        if not page.locator("#filebrowser").is_visible():
            page.click('.jp-SideBar [data-id="filebrowser"]')
        try:
            expect(item).to_be_visible()
            return item
        except AssertionError:
            continue
    expect(item).to_be_visible()
    return item


def test_yaml_file_opens_in_the_launch_form(page, lab: Lab) -> None:
    name = f"from-file-{int(time.time())}"
    (lab.root_dir / "train-job.yaml").write_text(JOB.format(name=name))
    show_file(page, "train-job.yaml").click(button="right")
    page.locator(".lm-Menu-itemLabel", has_text="Open in PAI Launch Form").click()

    form = page.locator(".jp-PAI-launch")
    expect(form.locator("[data-path='name'] input")).to_have_value(name)
    expect(form.locator("[data-path='taskRoles.trainer.instances'] input")).to_have_value("3")
    expect(
        form.locator("[data-path='taskRoles.trainer.resourcePerInstance.gpu'] input")
    ).to_have_value("1")
    expect(form.locator("[data-path='taskRoles.trainer.commands'] textarea")).to_have_value(
        "python train.py --epochs 3"
    )
    shot(page, "open-job-file-form")

    # A file that is not a job says why instead of opening a blank form.
    (lab.root_dir / "notes.yaml").write_text("just: notes\n")
    show_file(page, "notes.yaml").click(button="right")
    page.locator(".lm-Menu-itemLabel", has_text="Open in PAI Launch Form").click()
    expect(page.locator(".jp-Notification-Toast-error, .Toastify__toast--error")).to_contain_text(
        "has no taskRoles"
    )
