"""Open a 200 MB task log in the log viewer and measure that it stays responsive.

Submits a job (REST) whose task writes ~200 MB of lines and then keeps writing one
line a second, opens its detail tab in JupyterLab (Debian's Chromium), and prints:
time to the first rows, DOM rows rendered, how long scrolling and loading earlier
parts take, the JS heap, and whether new lines arrive while following.

    python ui-smoke/biglog.py --url http://127.0.0.1:8899 --token TOKEN
"""

from __future__ import annotations

import argparse
import json
import os
import time
import urllib.request

from playwright.sync_api import sync_playwright

WRITER = (
    "python3 -c \"import sys,time\n"
    "w=sys.stdout.write\n"
    "for i in range({lines}): w('%09d epoch %d step %d loss %.6f lr 0.001 %s\\n' % (i, i//1000, i, 1/(i+1), 'x'*40))\n"
    "sys.stdout.flush()\n"
    "for j in range(300): print('live line', j, flush=True); time.sleep(1)\""
)


def api(url: str, token: str, path: str, body: dict | None = None) -> dict:
    req = urllib.request.Request(
        f"{url}/pai/api/{path}",
        data=json.dumps(body).encode() if body is not None else None,
        headers={"Authorization": f"token {token}", "Content-Type": "application/json"},
        method="POST" if body is not None else "GET",
    )
    with urllib.request.urlopen(req) as r:
        return json.loads(r.read() or b"null")


def log_size(url: str, token: str, job_id: str) -> int:
    req = urllib.request.Request(
        f"{url}/pai/api/jobs/{job_id}/logs?role=worker&index=0&offset=0&limit=0",
        headers={"Authorization": f"token {token}"},
    )
    with urllib.request.urlopen(req) as r:
        return int(r.headers.get("X-Log-Size", "0"))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", default="http://127.0.0.1:8899")
    ap.add_argument("--token", default="")
    ap.add_argument("--lines", type=int, default=2_000_000)
    ap.add_argument("--out", default="/tmp/pai-shots")
    ap.add_argument("--chromium", default="/usr/bin/chromium")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    name = f"biglog-{int(time.time())}"
    job = api(args.url, args.token, "jobs", {
        "protocolVersion": 2, "name": name, "type": "job",
        "prerequisites": [{"name": "img", "type": "dockerimage", "uri": "python:3.11"}],
        "taskRoles": {"worker": {"instances": 1, "dockerImage": "img",
                                 "resourcePerInstance": {"cpu": 1, "memoryMB": 512, "gpu": 0},
                                 "commands": [WRITER.format(lines=args.lines)]}},
    })
    job_id = job["id"]
    t0 = time.time()
    while log_size(args.url, args.token, job_id) < args.lines * 95 and time.time() - t0 < 300:
        time.sleep(2)
    size = log_size(args.url, args.token, job_id)
    print(f"log of {job_id}: {size / 1e6:.0f} MB written in {time.time() - t0:.0f}s")

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=args.chromium,
                                    args=["--no-sandbox", "--enable-precise-memory-info"])
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        page.goto(f"{args.url}/lab?token={args.token}&reset")
        page.click(".jp-SideBar [data-id='jupyter-pai-panel']")
        page.click("#jp-PAI-tab-jobs")
        t = time.time()
        page.click(f"[data-job-id='{job_id}'] .jp-PAI-job-name")
        page.wait_for_selector(".jp-PAI-log-line", timeout=60000)
        print(f"first rows after {time.time() - t:.2f}s")
        rows = page.eval_on_selector_all(".jp-PAI-log-line", "els => els.length")
        print(f"DOM rows: {rows}")
        status = page.inner_text(".jp-PAI-log-status")
        print("status:", status)
        # Scroll up through the window, loading earlier parts, and time each step.
        steps = []
        for _ in range(30):
            t = time.time()
            page.eval_on_selector(".jp-PAI-log-scroller", "s => { s.scrollTop = 0; s.dispatchEvent(new Event('scroll')); }")
            page.wait_for_timeout(50)
            page.wait_for_function("() => !document.querySelector('.jp-PAI-log-status').textContent.startsWith('Reading')")
            steps.append(time.time() - t)
        print(f"30 scroll-to-top steps (each may read {512} KiB earlier): mean {1000 * sum(steps) / len(steps):.0f} ms, max {1000 * max(steps):.0f} ms")
        # Smoothness: frames while scrolling down through the loaded window.
        frame = page.evaluate("""async () => {
            const s = document.querySelector('.jp-PAI-log-scroller');
            const times = [];
            let last = performance.now();
            for (let i = 0; i < 120; i++) {
                s.scrollTop += 400;
                await new Promise(r => requestAnimationFrame(r));
                const now = performance.now(); times.push(now - last); last = now;
            }
            times.sort((a, b) => a - b);
            return {median: times[60], p95: times[114], max: times[119]};
        }""")
        print(f"frame times while scrolling (ms): {frame}")
        heap = page.evaluate("() => performance.memory ? performance.memory.usedJSHeapSize : null")
        if heap:
            print(f"JS heap: {heap / 1e6:.0f} MB")
        print("status:", page.inner_text(".jp-PAI-log-status"))
        page.screenshot(path=os.path.join(args.out, "biglog-scrolled.png"))
        # Jump to the end and see live lines arrive.
        page.click("text=⤓ End")
        page.wait_for_timeout(4000)
        last = page.eval_on_selector_all(".jp-PAI-log-line", "els => els.map(e => e.textContent).slice(-3)")
        print("last rows after End:", last)
        page.screenshot(path=os.path.join(args.out, "biglog-end.png"))
        page.fill(".jp-PAI-log-search", "step 1999990 ")
        page.keyboard.press("Enter")
        page.wait_for_timeout(500)
        print("search:", page.inner_text(".jp-PAI-log-search-status"))
        browser.close()
    req = urllib.request.Request(f"{args.url}/pai/api/jobs/{job_id}", method="DELETE",
                                 headers={"Authorization": f"token {args.token}"})
    urllib.request.urlopen(req).read()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
