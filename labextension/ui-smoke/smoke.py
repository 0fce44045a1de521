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
        browser.close()
    real = [e for e in errors if "jupyter-pai" in e or "PAI" in e]
    print("console errors:", *errors, sep="\n  ")
    return 1 if real else 0


if __name__ == "__main__":
    sys.exit(main())
