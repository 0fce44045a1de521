"""The job list follows jobs over the change stream (server-sent events) in
real Chromium — a job submitted elsewhere appears, and its state changes show, with no
``GET jobs`` in between (while the stream is up the panel polls only once a minute)."""

from __future__ import annotations

import time
from typing import Any
from urllib.parse import urlparse

from playwright.sync_api import expect

from .conftest import Lab, job_row, open_panel, shot


def test_the_job_list_follows_the_change_stream(page: Any, jobs: Lab) -> None:
    listed: list[str] = []

    def seen(request: Any) -> None:
        # The panel's list (no filter); views that ask for a state (the queue) are others.
        url = urlparse(request.url)
        if url.path.endswith("/pai/api/jobs") and request.method == "GET":
            if not any(f"{k}=" in url.query for k in ("state", "vc", "user", "keyword")):
                listed.append(request.url)

    page.on("request", seen)
    # Load again with the listener on, and wait until the stream answered.
    with page.expect_response(lambda r: "/pai/api/job-changes" in r.url) as streamed:
        page.reload()
    response = streamed.value
    assert response.status == 200, response.status
    assert response.headers["content-type"].startswith("text/event-stream")
    open_panel(page, "jobs")
    # The list read once the stream is up (ready): nothing after that drives the list.
    expect(page.locator("#jp-PAI-section-jobs")).to_be_visible()
    page.wait_for_timeout(1500)  # let the list that follows `ready` land
    before = len(listed)

    name = f"ui-stream-{int(time.time())}"
    job = jobs.submit(name, "sleep 3; echo done")
    row = job_row(page, name)
    expect(row).to_have_count(1, timeout=10_000)
    state = row.locator(".jp-PAI-col-state")
    expect(state).to_have_text("RUNNING", timeout=10_000)
    shot(page, "job-stream-1-appeared")
    expect(state).to_have_text("SUCCEEDED", timeout=20_000)
    shot(page, "job-stream-2-succeeded")
    assert jobs.job(job["id"])["state"] == "SUCCEEDED"
    assert listed[before:] == [], f"the list was polled, not streamed: {listed[before:]}"


def test_without_the_stream_the_job_list_polls(page: Any, jobs: Lab) -> None:
    """The stream refused (a proxy that drops it): the panel keeps its list current by
    polling, and keeps trying the stream with backoff."""
    tries: list[str] = []

    def refuse(route: Any) -> None:
        tries.append(route.request.url)
        route.abort()

    page.route("**/pai/api/job-changes*", refuse)
    page.reload()
    open_panel(page, "jobs")
    name = f"ui-polled-{int(time.time())}"
    jobs.submit(name, "sleep 3; echo done")
    state = job_row(page, name).locator(".jp-PAI-col-state")
    # The poll (every 5 s by default) finds it and its end.
    expect(state).to_have_text("SUCCEEDED", timeout=30_000)
    shot(page, "job-stream-3-polled")
    assert len(tries) >= 2, f"the stream was not tried again: {tries}"
