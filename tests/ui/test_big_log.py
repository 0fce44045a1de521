"""A 200 MB task log in the log viewer: how long until the first lines show, and
whether scrolling stays responsive (no long task or frame over a second).

The figures are printed (``pytest -s``). The log is written by a job of the local backend,
so it lives in the lab's state directory; it is removed after the test.
"""

from __future__ import annotations

import re
import time
import urllib.request
from pathlib import Path

from playwright.sync_api import expect

from .conftest import Lab, job_row, open_panel, shot

LINES = 2_500_000
LAST = LINES - 1
# ~80 bytes a line: 2.5 M lines are ~200 MB.
WRITER = (
    'python3 -c "import sys\n'
    "w=sys.stdout.write\n"
    f"for i in range({LINES}): "
    "w('%09d epoch %d step %d loss %.6f lr 0.001 %s\\n' % (i, i//1000, i, 1/(i+1), 'x'*30))\""
)

# Long tasks (>50 ms on the main thread) and the longest gap between animation frames,
# recorded from now on.
OBSERVE = """() => {
  window.__pai = {longTasks: [], maxFrameGap: 0, last: performance.now(), frames: 0};
  new PerformanceObserver(list => {
    for (const e of list.getEntries()) window.__pai.longTasks.push(e.duration);
  }).observe({type: 'longtask', buffered: false});
  const tick = now => {
    const p = window.__pai;
    p.maxFrameGap = Math.max(p.maxFrameGap, now - p.last);
    p.last = now;
    p.frames++;
    requestAnimationFrame(tick);
  };
  requestAnimationFrame(tick);
}"""

RESET = """() => {
  window.__pai.longTasks = []; window.__pai.maxFrameGap = 0;
  window.__pai.last = performance.now(); window.__pai.frames = 0;
}"""

STATS = """() => ({
  longTasks: window.__pai.longTasks.length,
  maxLongTask: Math.max(0, ...window.__pai.longTasks),
  maxFrameGap: window.__pai.maxFrameGap,
  frames: window.__pai.frames,
})"""

# Scroll the log to `top` (px; negative = from the end) and wait until the rows for that
# position are rendered; returns milliseconds and the first rendered line.
SCROLL = """async top => {
  const s = document.querySelector('.jp-PAI-detail-panel .jp-PAI-log-scroller');
  const t0 = performance.now();
  s.scrollTop = top < 0 ? s.scrollHeight + top : top;
  const want = Math.floor(s.scrollTop / 18);
  for (;;) {
    await new Promise(r => requestAnimationFrame(r));
    const rows = s.querySelector('.jp-PAI-log-rows');
    const m = /translateY\\((\\d+)px\\)/.exec(rows.style.transform || '');
    const first = m ? Number(m[1]) / 18 : 0;
    if (first <= want && want < first + rows.children.length) {
      return {ms: performance.now() - t0, line: rows.children[want - first].textContent,
              rows: rows.children.length};
    }
    if (performance.now() - t0 > 10000) return {ms: -1, line: null, rows: rows.children.length};
  }
}"""


def log_size(lab: Lab, job_id: str) -> int:
    request = urllib.request.Request(
        f"{lab.url}pai/api/jobs/{urllib.request.quote(job_id, safe='')}/logs"
        "?role=worker&index=0&offset=0&limit=0",
        headers={"Authorization": f"token {lab.token}"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return int(response.headers.get("X-Log-Size", "0"))


def test_200mb_log_opens_fast_and_scrolls_smoothly(page, jobs: Lab) -> None:
    name = f"ui-biglog-{int(time.time())}"
    started = time.monotonic()
    job = jobs.submit(name, WRITER)
    jobs.wait_state(job["id"], "SUCCEEDED", timeout=240)
    size = log_size(jobs, job["id"])
    written = time.monotonic() - started
    assert size > 190_000_000, size

    try:
        open_panel(page, "jobs")
        page.evaluate(OBSERVE)
        log = page.locator(".jp-PAI-detail-panel .jp-PAI-log")
        last_line = log.locator(".jp-PAI-log-line", has_text=re.compile(rf"^{LAST:09d} epoch"))
        t0 = time.monotonic()
        job_row(page, name).locator(".jp-PAI-job-name").click()
        expect(last_line).to_be_visible(timeout=30_000)
        first_lines = time.monotonic() - t0
        opened = page.evaluate(STATS)
        rows_in_dom = log.locator(".jp-PAI-log-line").count()
        expect(log.locator(".jp-PAI-log-status")).to_contain_text(re.compile(r"of 2\d\d MiB"))
        shot(page, "big-log-1-end")

        # Scrolling inside the part of the log that is read (not to its top, which reads more).
        page.evaluate(RESET)
        local = [page.evaluate(SCROLL, top) for top in (2_000, 40_000, -20_000, -1_000, 5_000)]
        # Scrolling to the top reads the part before (512 KiB at a time), four times.
        earlier = []
        for _ in range(4):
            start = page.evaluate("() => document.querySelector('.jp-PAI-log-status').textContent")
            t = time.monotonic()
            page.evaluate(
                "() => { document.querySelector('.jp-PAI-detail-panel .jp-PAI-log-scroller')"
                ".scrollTop = 0; }"
            )
            expect(log.locator(".jp-PAI-log-status")).not_to_have_text(start)
            # The view stays where it was: the lines read are above it.
            expect(log.locator(".jp-PAI-log-line").first).to_be_visible()
            earlier.append(time.monotonic() - t)
        # Home and End: the start of the log (another byte range) and back to its end.
        t = time.monotonic()
        log.get_by_role("button", name="Jump to the start of the log (Home)").click()
        expect(
            log.locator(".jp-PAI-log-line", has_text=re.compile(r"^000000000 epoch"))
        ).to_be_visible()
        to_start = time.monotonic() - t
        shot(page, "big-log-2-start")
        page.evaluate(SCROLL, -5_000)
        t = time.monotonic()
        log.get_by_role("button", name="Jump to the end and follow new output (End)").click()
        expect(last_line).to_be_in_viewport()
        to_end = time.monotonic() - t
        # A wheel scroll up from the end lands and renders earlier lines.
        box = log.locator(".jp-PAI-log-scroller").bounding_box()
        assert box is not None
        page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        t = time.monotonic()
        for _ in range(10):
            page.mouse.wheel(0, -3_000)
        expect(last_line).to_have_count(0)
        wheel = time.monotonic() - t
        scrolling = page.evaluate(STATS)
        rows_after = log.locator(".jp-PAI-log-line").count()
        shot(page, "big-log-3-scrolled")
    finally:
        for path in Path(jobs.state_dir).rglob("*"):
            if path.is_file() and path.stat().st_size > 50_000_000:
                path.unlink()

    print(
        f"\n200 MB log: {size / 1e6:.1f} MB, {LINES:,} lines, written in {written:.1f} s\n"
        f"  first lines visible after {first_lines * 1000:.0f} ms "
        f"(long tasks while opening: {opened['longTasks']}, longest {opened['maxLongTask']:.0f} ms)\n"
        f"  rows in the DOM: {rows_in_dom} after opening, {rows_after} after scrolling\n"
        f"  scroll within the read part, land and render: "
        + ", ".join(f"{r['ms']:.0f}" for r in local)
        + " ms\n"
        "  scroll to the top, read the part before: "
        + ", ".join(f"{e * 1000:.0f}" for e in earlier)
        + " ms\n"
        f"  jump to start {to_start * 1000:.0f} ms, jump to end {to_end * 1000:.0f} ms, "
        f"10 wheel scrolls up {wheel * 1000:.0f} ms\n"
        f"  while scrolling: {scrolling['longTasks']} long tasks, longest "
        f"{scrolling['maxLongTask']:.0f} ms; longest frame {scrolling['maxFrameGap']:.0f} ms "
        f"over {scrolling['frames']} frames"
    )
    assert first_lines < 5, first_lines
    assert all(0 <= r["ms"] < 1000 for r in local), local
    assert all(re.match(r"^\d{9} epoch", r["line"]) for r in local), local
    assert all(e < 5 for e in earlier), earlier
    assert to_start < 5 and to_end < 5, (to_start, to_end)
    assert scrolling["maxLongTask"] < 1000, scrolling
    assert scrolling["maxFrameGap"] < 1000, scrolling
    assert rows_in_dom < 300 and rows_after < 300, (rows_in_dom, rows_after)
