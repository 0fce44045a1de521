"""Smoke check of the PAI side panel in a real JupyterLab, with Debian's Chromium.

Not the UI test suite: a developer's script that opens each section, submits a job,
opens its detail tab and log, and keeps screenshots. Usage:

    python ui-smoke/smoke.py --url http://127.0.0.1:8899 --token TOKEN --out /tmp/shots [--dark]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

from playwright.sync_api import Page, sync_playwright


def shot(page: Page, out: str, name: str) -> None:
    path = os.path.join(out, f"{name}.png")
    page.screenshot(path=path)
    print("screenshot", path)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", default="http://127.0.0.1:8899")
    ap.add_argument("--token", default="")
    ap.add_argument("--out", default="/tmp/pai-shots")
    ap.add_argument("--dark", action="store_true")
    ap.add_argument("--chromium", default="/usr/bin/chromium")
    ap.add_argument("--job-command", default="for i in $(seq 1 50); do echo step $i loss 0.$i; sleep 0.1; done")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    errors: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=args.chromium, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        theme = "JupyterLab Dark" if args.dark else "JupyterLab Light"
        headers = {"Authorization": f"token {args.token}"}
        page.request.put(
            f"{args.url}/lab/api/settings/@jupyterlab/apputils-extension:themes",
            data=json.dumps({"raw": json.dumps({"theme": theme})}),
            headers={**headers, "Content-Type": "application/json"},
        )
        page.goto(f"{args.url}/lab?token={args.token}&reset")
        page.wait_for_selector("#jupyter-pai-panel", state="attached", timeout=60000)
        page.click(".jp-SideBar [data-id='jupyter-pai-panel']")
        page.wait_for_selector(".jp-PAI-info-user", timeout=30000)
        suffix = "-dark" if args.dark else ""
        for section in ("cluster", "storage", "jobs", "launch"):
            page.click(f"#jp-PAI-tab-{section}")
            time.sleep(1)
            shot(page, args.out, f"panel-{section}{suffix}")

        # Storage: preview a file, then mount a folder into the launch form.
        page.click("#jp-PAI-tab-storage")
        page.wait_for_selector(".jp-PAI-entries, .jp-PAI-storage .jp-PAI-empty", timeout=10000)
        texts = [
            f for f in page.query_selector_all(".jp-PAI-entry-file .jp-PAI-entry-name")
            if f.inner_text().strip().endswith((".json", ".txt", ".log", ".yaml", ".py", ".md"))
        ]
        if texts:
            texts[0].click()
            page.wait_for_selector(".jp-PAI-preview-text", timeout=10000)
            shot(page, args.out, f"storage-preview{suffix}")
            print("preview:", page.inner_text(".jp-PAI-preview-text")[:60].replace("\n", " "))
            page.click("[aria-label='Close preview']")
        page.click(".jp-PAI-storage >> text=Mount this folder")
        page.wait_for_selector("#jp-PAI-section-launch:not([hidden]) .jp-PAI-mount", timeout=10000)
        print("mount: the launch form mounts", page.input_value(".jp-PAI-mount select"))
        page.click(".jp-PAI-mount [aria-label^='Remove storage']")

        # Submit: a bad name first (error next to the field), then a good job.
        page.fill("[data-path='name'] input", "bad name!")
        page.fill("[data-path='taskRoles.worker.commands'] textarea", args.job_command)
        page.click(".jp-PAI-submit")
        page.wait_for_selector("[data-path='name'].jp-mod-invalid", timeout=10000)
        shot(page, args.out, f"form-error{suffix}")
        name = f"smoke-{int(time.time())}"
        page.fill("[data-path='name'] input", name)
        page.fill("[data-path='taskRoles.worker.resourcePerInstance.gpu'] input", "1")
        page.click(".jp-PAI-submit")
        page.wait_for_selector(".jp-PAI-detail-head h2", timeout=30000)
        page.wait_for_selector(".jp-PAI-log-line", timeout=60000)
        time.sleep(4)
        shot(page, args.out, f"job-detail{suffix}")
        page.fill(".jp-PAI-log-search", "loss 0.2")
        page.keyboard.press("Enter")
        time.sleep(1)
        shot(page, args.out, f"log-search{suffix}")

        # YAML mode.
        page.click("#jp-PAI-tab-launch")
        page.click("text=Edit as YAML")
        page.wait_for_selector(".jp-PAI-yaml-text")
        text = page.input_value(".jp-PAI-yaml-text")
        page.fill(".jp-PAI-yaml-text", text.replace("instances: 1", "instances: 0"))
        page.wait_for_selector(".jp-PAI-yaml-errors", timeout=5000)
        shot(page, args.out, f"yaml-error{suffix}")
        page.click("#jp-PAI-tab-jobs")
        time.sleep(1)
        shot(page, args.out, f"jobs-after{suffix}")

        # The job ends: a notification says so.
        page.wait_for_selector(f".Toastify__toast:has-text('{name} succeeded')", timeout=60000)
        print("notification: job succeeded")

        # Clone: the form opens filled from the job's spec, with a new name.
        page.click(f"[data-job-id$='{name}'] [aria-label='Clone {name}']")
        page.wait_for_selector("#jp-PAI-section-launch:not([hidden])", timeout=10000)
        page.wait_for_function(
            f"() => document.querySelector(\"[data-path='name'] input\")?.value === '{name}-2'",
            timeout=10000,
        )
        cloned = page.input_value("[data-path='name'] input")
        command = page.input_value("[data-path='taskRoles.worker.commands'] textarea")
        assert cloned == f"{name}-2", cloned
        assert command == args.job_command, command
        print("clone: form filled as", cloned)

        # Two one-GPU jobs in the one-GPU VC: the second waits, with its reason shown.
        for i in (1, 2):
            page.fill("[data-path='name'] input", f"{name}-wait{i}")
            page.select_option("[data-path='defaults.virtualCluster'] select", "default")
            page.fill("[data-path='taskRoles.worker.commands'] textarea", "sleep 30")
            page.click(".jp-PAI-submit")
            page.wait_for_selector(f".jp-PAI-detail-head h2:has-text('{name}-wait{i}')", timeout=30000)
        try:
            page.wait_for_selector(".jp-PAI-waiting >> visible=true", timeout=30000)
        except Exception:
            shot(page, args.out, "failure")
            raise
        print("waiting:", page.inner_text(".jp-PAI-waiting >> visible=true"))
        shot(page, args.out, f"job-waiting{suffix}")
        page.click(".jp-PAI-detail-head >> visible=true >> text=Stop")
        page.click(".jp-Dialog >> text=Stop job")
        page.wait_for_selector(".jp-PAI-detail-head .jp-PAI-state-stopped >> visible=true", timeout=30000)
        print("stop: the waiting job is STOPPED")
        page.click("#jp-PAI-tab-cluster")
        time.sleep(1)
        shot(page, args.out, f"cluster-busy{suffix}")
        browser.close()
    real = [e for e in errors if "jupyter-pai" in e or "PAI" in e]
    print("console errors:", *errors, sep="\n  ")
    return 1 if real else 0


if __name__ == "__main__":
    sys.exit(main())
