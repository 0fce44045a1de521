"""The job list pages: with more jobs than a page, the panel reads the newest 100, says how
many there are, and reads older ones a page at a time on "Show more"."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from benchmarks.list_jobs import seed

from .conftest import Lab, job_row, open_page, open_panel, run_lab, shot

SEEDED = 230  # ended jobs of 50 users, job-00000 the oldest


@pytest.fixture(scope="module")
def paged_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    base = tmp_path_factory.mktemp("paged-lab")
    seed(base / "state", SEEDED)
    with run_lab(base, env={"JUPYTER_PAI_LOCAL_GPUS": "2", "JUPYTER_PAI_BACKEND": "local"}) as lab:
        yield lab


def test_show_more_reads_older_pages(browser: object, paged_lab: Lab) -> None:
    with open_page(browser, paged_lab, "job-list-pages") as page:
        open_panel(page, "jobs")
        page.get_by_title("Only my jobs").locator("input").uncheck()
        count = page.locator(".jp-PAI-more-count")
        count.filter(has_text=f"The newest 100 of {SEEDED} jobs").wait_for()
        rows = page.locator(".jp-PAI-job-row")
        assert rows.count() == 100
        job_row(page, "job-00229").wait_for()  # the newest first
        assert job_row(page, "job-00129").count() == 0  # the 101st: not read yet
        shot(page, "job-list-pages-first")

        page.get_by_role("button", name="Show more").click()
        count.filter(has_text=f"The newest 200 of {SEEDED} jobs").wait_for()
        assert rows.count() == 200
        job_row(page, "job-00030").wait_for()
        assert job_row(page, "job-00029").count() == 0

        page.get_by_role("button", name="Show more").click()
        count.filter(has_text=f"{SEEDED} jobs").wait_for()
        job_row(page, "job-00000").scroll_into_view_if_needed()
        assert rows.count() == SEEDED
        more: Any = page.get_by_role("button", name="Show more")
        assert more.count() == 0
        shot(page, "job-list-pages-all")
