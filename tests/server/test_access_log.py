"""The access log of the API's requests: successes are debug lines, made only where debug
lines are logged; failures are logged as jupyter_server logs them; every request counts in
the server's request metrics either way."""

from __future__ import annotations

import logging
import re

import pytest
from jupyter_server.prometheus.metrics import HTTP_REQUEST_DURATION_SECONDS

from .pai import PAIClient

JOBS_HANDLER = "jupyter_pai.server.handlers.jobs.JobsHandler"


def requests_counted(handler: str) -> float:
    """How many GET requests with status 200 the metric holds for the handler (its module
    and class)."""
    for metric in HTTP_REQUEST_DURATION_SECONDS.collect():
        for sample in metric.samples:
            labels = sample.labels
            if (
                sample.name.endswith("_count")
                and labels.get("handler") == handler
                and labels.get("method") == "GET"
                and labels.get("status_code") == "200"
            ):
                return sample.value
    return 0.0


def access_lines(
    caplog: pytest.LogCaptureFixture, status: int, path: str
) -> list[logging.LogRecord]:
    """The access log's lines for ``GET`` of ``path`` (under the server's base URL)."""
    line = re.compile(rf"{status} GET /\S*{re.escape(path)} \(")
    return [r for r in caplog.records if line.match(r.getMessage())]


async def test_a_success_is_a_debug_line_only_where_debug_is_logged(
    pai: PAIClient, caplog: pytest.LogCaptureFixture
) -> None:
    before = requests_counted(JOBS_HANDLER)
    caplog.set_level(logging.INFO)
    assert (await pai.request("GET", "jobs")).code == 200
    assert access_lines(caplog, 200, "/pai/api/jobs") == []
    assert requests_counted(JOBS_HANDLER) == before + 1

    caplog.set_level(logging.DEBUG)
    assert (await pai.request("GET", "jobs")).code == 200
    [line] = access_lines(caplog, 200, "/pai/api/jobs")
    assert line.levelno == logging.DEBUG
    assert requests_counted(JOBS_HANDLER) == before + 2


async def test_a_failure_is_logged_as_jupyter_server_logs_it(
    pai: PAIClient, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    assert (await pai.request("GET", "jobs", "alice~nothing")).code == 404
    lines = access_lines(caplog, 404, "/pai/api/jobs/alice~nothing")
    assert [r.levelno for r in lines] == [logging.WARNING]
