"""OpenPAI v1 JSON jobs open in the launch form through the server's converter
(file browser, Import, the YAML editor), fields that cannot be converted are named.
("Open TensorBoard" for a port labelled ``tensorboard``: tests/ui/test_task_ports.py.)"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

from playwright.sync_api import expect

from .conftest import ROOT, Lab, open_panel, shot

TOASTS = ".Toastify__toast"


def settled(toast: Any) -> Any:
    """The notification once it has slid in (for screenshots that show it whole)."""
    expect(toast).not_to_have_class(re.compile(r"Toastify--animate"))
    return toast


def v1_job(name: str) -> dict[str, Any]:
    """The repository's v1 ps/worker example under another name."""
    job: dict[str, Any] = json.loads((ROOT / "examples" / "openpai-v1-ps-worker.json").read_text())
    job["jobName"] = name
    return job


def show_file(page: Any, name: str) -> Any:
    """Reload so the file browser lists a file written meanwhile; return its item."""
    page.reload()
    page.wait_for_selector("#jp-main-dock-panel", state="attached")
    if not page.locator("#filebrowser").is_visible():
        page.click('.jp-SideBar [data-id="filebrowser"]')
    item = page.locator(".jp-DirListing-item", has_text=name)
    expect(item).to_be_visible()
    return item


def open_in_form(page: Any, root: Path, name: str, text: str) -> None:
    (root / name).write_text(text)
    show_file(page, name).click(button="right")
    page.locator(".lm-Menu-itemLabel", has_text="Open in PAI Launch Form").click()


def test_v1_file_opens_converted_in_the_launch_form(page: Any, jobs: Lab) -> None:
    name = f"v1-from-file-{int(time.time())}"
    open_in_form(page, jobs.root_dir, "old-tf-job.json", json.dumps(v1_job(name), indent=2))

    form = page.locator(".jp-PAI-launch")
    # The server's first conversion may take a while on a busy machine (imports on first use).
    expect(form.locator("[data-path='name'] input")).to_have_value(name, timeout=30_000)
    notice = page.locator(TOASTS).filter(has_text="Imported old-tf-job.json")
    expect(notice).to_contain_text("converted from OpenPAI v1 to protocol v2")
    expect(form.locator("[data-path='defaults.virtualCluster'] select")).to_have_value("default")
    expect(form.locator("#jp-PAI-image-uri")).to_have_value("openpai/pai.example.tensorflow")
    # taskRoles[] became a mapping by name; taskNumber, gpuNumber, memoryMB, portList carried.
    ps, worker = "taskRoles.ps_server", "taskRoles.worker"
    expect(form.locator(f"[data-path='{ps}.instances'] input")).to_have_value("1")
    expect(form.locator(f"[data-path='{worker}.instances'] input")).to_have_value("2")
    expect(form.locator(f"[data-path='{worker}.resourcePerInstance.gpu'] input")).to_have_value("1")
    expect(
        form.locator(f"[data-path='{worker}.resourcePerInstance.memoryMB'] input")
    ).to_have_value("2048")
    expect(form.locator(f"[data-path='{worker}.resourcePerInstance.ports'] input")).to_have_value(
        "grpc:1"
    )
    expect(form.locator(f"[data-path='{worker}.commands'] textarea")).to_have_value(
        json.loads((ROOT / "examples" / "openpai-v1-ps-worker.json").read_text())["taskRoles"][1][
            "command"
        ]
    )
    # jobEnvs stay variables (exported by the converted deployment), not form parameters.
    expect(form.get_by_label("parameter 1 name")).to_have_count(0)
    settled(notice)
    shot(page, "openpai-v1-1-file-in-form")

    # Submitted from the form, the job keeps what the form does not show and runs.
    form.locator(".jp-PAI-submit").click()
    expect(page.locator(".jp-PAI-detail-head h2")).to_have_text(name)
    job = jobs.job_by_name(name)
    jobs.submitted.append(job["id"])
    spec = jobs.job(job["id"])["spec"]
    exports = spec["deployments"][0]["taskRoles"]["worker"]["preCommands"]
    assert "export model=resnet20" in exports
    assert any(e.startswith("export PAI_DATA_DIR=") for e in exports)
    done = jobs.wait_state(job["id"], "SUCCEEDED", "FAILED", timeout=90)
    assert done["state"] == "SUCCEEDED", done


def test_v1_fields_that_cannot_be_converted_are_named(page: Any, lab: Lab) -> None:
    bad = v1_job(f"v1-bad-{int(time.time())}")
    bad["authFile"] = "hdfs://namenode/user/auth.txt"
    bad["taskRoles"][1]["portList"][0]["beginAt"] = 5000
    text = json.dumps(bad, indent=2)

    # From the file browser: a notification that names each field, not "failed", and
    # what is wrong with each behind "Details" (JupyterLab cuts notifications short).
    open_in_form(page, lab.root_dir, "old-auth-job.json", text)
    error = page.locator(".Toastify__toast--error")
    expect(error).to_contain_text("cannot be converted", timeout=30_000)
    expect(error).to_contain_text(
        "old-auth-job.json cannot be converted from OpenPAI v1: "
        "authFile, taskRoles[1].portList[0].beginAt"
    )
    settled(error)
    shot(page, "openpai-v1-2-bad-file-notification")
    error.get_by_role("button", name="Details").click()
    dialog = page.locator(".jp-Dialog")
    expect(dialog).to_contain_text("old-auth-job.json cannot be converted from OpenPAI v1")
    items = dialog.locator(".jp-PAI-dialog-errors li")
    expect(items).to_have_count(2)
    expect(items.nth(0)).to_contain_text(
        "authFile: cannot be converted: an HDFS file of registry credentials cannot be read"
    )
    expect(items.nth(1)).to_contain_text(
        "taskRoles[1].portList[0].beginAt: a fixed first port cannot be converted"
    )
    shot(page, "openpai-v1-3-bad-file-details")
    dialog.get_by_role("button", name="Ok").click()
    expect(dialog).to_have_count(0)

    # From the Import button: the file in the YAML editor, each field at its line.
    open_panel(page, "launch")
    form = page.locator(".jp-PAI-launch")
    form.locator("input[type=file]").set_input_files(
        files=[
            {"name": "old-auth-job.json", "mimeType": "application/json", "buffer": text.encode()}
        ]
    )
    expect(form.locator(".jp-PAI-error")).to_contain_text(
        "old-auth-job.json cannot be converted from OpenPAI v1"
    )
    errors = form.locator(".jp-PAI-yaml-errors li")
    lines = text.split("\n")
    auth_line = next(i for i, line in enumerate(lines, 1) if '"authFile"' in line)
    begin_line = next(i for i, line in enumerate(lines, 1) if '"beginAt": 5000' in line)
    expect(errors.filter(has_text="authFile")).to_contain_text(f"line {auth_line}")
    expect(errors.filter(has_text="authFile")).to_contain_text(
        "an HDFS file of registry credentials cannot be read"
    )
    expect(errors.filter(has_text="beginAt")).to_contain_text(f"line {begin_line}")
    expect(errors.filter(has_text="beginAt").locator("code")).to_have_text(
        "taskRoles[1].portList[0].beginAt"
    )
    expect(errors.filter(has_text="beginAt")).to_contain_text(
        "a fixed first port cannot be converted"
    )
    # The server's words stay (the schema's own check would phrase them differently).
    page.wait_for_timeout(500)
    expect(errors.filter(has_text="authFile")).to_contain_text(
        "an HDFS file of registry credentials cannot be read"
    )
    shot(page, "openpai-v1-4-bad-file-import")


def test_v1_json_submits_from_the_yaml_editor(page: Any, jobs: Lab) -> None:
    name = f"v1-yaml-{int(time.time())}"
    job = {
        "jobName": name,
        "image": "python:3.11",
        "taskRoles": [
            {
                "name": "main",
                "taskNumber": 1,
                "cpuNumber": 1,
                "memoryMB": 256,
                "gpuNumber": 0,
                "command": "echo hello from $greeting",
            }
        ],
        "jobEnvs": {"greeting": "v1"},
    }
    open_panel(page, "launch")
    form = page.locator(".jp-PAI-launch")
    form.get_by_role("button", name="Edit as YAML").click()
    form.locator("#jp-PAI-yaml-text").fill(json.dumps(job, indent=2))
    expect(form.locator("#jp-PAI-yaml-errors")).to_have_text(
        "Valid OpenPAI v1 job: converted to protocol v2 when submitted."
    )
    # A v1 field the schema refuses is named as typed, before anything is sent.
    form.locator("#jp-PAI-yaml-text").fill(
        json.dumps({**job, "authFile": "hdfs://namenode/user/auth.txt"}, indent=2)
    )
    expect(form.locator(".jp-PAI-yaml-errors")).to_contain_text(
        "authFile: HDFS credentials cannot be converted"
    )
    shot(page, "openpai-v1-5-yaml-editor-error")
    form.locator("#jp-PAI-yaml-text").fill(json.dumps(job, indent=2))
    expect(form.locator("#jp-PAI-yaml-errors")).to_contain_text("Valid OpenPAI v1 job")
    form.locator(".jp-PAI-submit").click()
    expect(page.locator(".jp-PAI-detail-head h2")).to_have_text(name)
    submitted = jobs.job_by_name(name)
    jobs.submitted.append(submitted["id"])
    done = jobs.wait_state(submitted["id"], "SUCCEEDED", "FAILED", timeout=60)
    assert done["state"] == "SUCCEEDED", done

    # Back to the form: the server converts the YAML's v1 job for it.
    form.get_by_role("button", name="Form", exact=True).click()
    expect(form.locator("[data-path='name'] input")).to_have_value(name)
    expect(form.locator("[data-path='taskRoles.main.commands'] textarea")).to_have_value(
        "echo hello from $greeting"
    )
    expect(form.get_by_label("parameter 1 name")).to_have_count(0)
    expect(page.locator(TOASTS).filter(has_text="Opened the YAML in the form")).to_contain_text(
        "converted from OpenPAI v1 to protocol v2"
    )
