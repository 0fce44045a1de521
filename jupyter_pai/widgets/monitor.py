"""``jupyter_pai.widgets.monitor()``: your jobs as a live table — state, GPUs, duration,
a stop button per job — and the selected job's log tail, read again every second on a
background thread."""

from __future__ import annotations

import html
import threading
from typing import TYPE_CHECKING

import ipywidgets as w

from ..backends.models import JobSummary
from ..errors import PAIError
from .jobview import LOG_TAIL_LINES, duration, reason, state_badge
from .live import DEFAULT_INTERVAL, LiveBox, Ticker, error_html

if TYPE_CHECKING:
    from ..notebook.client import Client

COLUMNS = ["job", "state", "GPUs", "duration", ""]
WIDTHS = "minmax(160px, 2fr) minmax(200px, 3fr) 60px 90px 80px"


class JobRow:
    """The widgets of one job's row, kept across refreshes so the table does not flicker."""

    def __init__(self, monitor: Monitor, job_id: str) -> None:
        self.job_id = job_id
        self.name = w.Button(tooltip="show this job's log", layout=w.Layout(width="auto"))
        self.name.add_class("jp-pai-job-name")
        self.state = w.HTML()
        self.gpus = w.Label()
        self.duration = w.Label()
        self.stop = w.Button(description="Stop", button_style="danger", icon="stop")
        self.stop.layout.width = "75px"
        self.name.on_click(lambda _: monitor.select(job_id))
        self.stop.on_click(lambda _: monitor.stop(job_id))
        self.cells: list[w.Widget] = [self.name, self.state, self.gpus, self.duration, self.stop]

    def show(self, job: JobSummary, selected: bool) -> None:
        self.name.description = job.name
        self.name.button_style = "info" if selected else ""
        why = reason(job)
        self.state.value = state_badge(job.state, job.id) + (
            f' <span style="opacity:0.7">{html.escape(why)}</span>' if why else ""
        )
        self.gpus.value = str(job.total_gpu_number)
        self.duration.value = duration(job)
        self.stop.disabled = job.state.terminal


class Monitor(LiveBox):
    """The table (newest first, at most ``limit`` jobs) and the selected job's log."""

    def __init__(
        self,
        client: Client,
        *,
        interval: float = DEFAULT_INTERVAL,
        limit: int = 20,
        live: bool = True,
        user: str | None = None,
    ) -> None:
        self.client = client
        self.limit = limit
        self.user = user if user is not None else client.info().user
        self.rows: dict[str, JobRow] = {}
        self.jobs: list[JobSummary] = []
        self.selected: str | None = None
        self._lock = threading.RLock()  # the ticker's thread and button clicks both refresh
        self.table = w.GridBox(layout=w.Layout(grid_template_columns=WIDTHS, grid_gap="2px 8px"))
        self.table.add_class("jp-pai-monitor-table")
        self.log_title = w.HTML()
        self.log_view = w.HTML()
        self.status = w.HTML()
        super().__init__([self.table, self.status, self.log_title, self.log_view])
        self.add_class("jp-pai-monitor")
        self.refresh()
        if live:
            self.ticker = Ticker(self.refresh, interval, on_error=self._show_error).start()

    def refresh(self) -> None:
        """Read the jobs (and the selected job's log) again."""
        with self._lock:
            self._refresh()

    def _refresh(self) -> None:
        jobs = self.client.jobs(user=self.user)[: self.limit]
        self.jobs = jobs
        header = [w.HTML(f"<b>{c}</b>") for c in COLUMNS] if not self.table.children else None
        rows = [self.rows.get(j.id) or JobRow(self, j.id) for j in jobs]
        self.rows = {row.job_id: row for row in rows}
        for job, row in zip(jobs, rows, strict=True):
            row.show(job, job.id == self.selected)
        cells = [c for row in rows for c in row.cells]
        head = header if header is not None else list(self.table.children[: len(COLUMNS)])
        if list(self.table.children) != head + cells:
            self.table.children = head + cells
        if not jobs:
            self.status.value = "<i>no jobs yet</i>"
        elif self.status.value == "<i>no jobs yet</i>":
            self.status.value = ""
        self._update_log()

    def select(self, job_id: str) -> None:
        """Show this job's log tail below the table."""
        with self._lock:
            self.selected = job_id
            for job in self.jobs:
                self.rows[job.id].show(job, job.id == job_id)
            self._update_log()

    def stop(self, job_id: str) -> None:
        try:
            self.client.job(job_id).stop()
        except PAIError as exc:
            self._show_error(exc)
            return
        self.status.value = f"stopping {html.escape(job_id)}"
        self.refresh()

    def _update_log(self) -> None:
        if self.selected is None:
            return
        job = self.client.job(self.selected)
        task = job.tasks[0] if job.tasks else None
        if task is None:
            return
        text = job.logs(task.role, task.index, tail=LOG_TAIL_LINES)
        self.log_title.value = (
            f"<b>{html.escape(job.id)}</b> {state_badge(job.detail.state, job.id)} — "
            f"log of {html.escape(task.role)}-{task.index}, last {LOG_TAIL_LINES} lines"
        )
        self.log_view.value = f'<pre class="jp-pai-log">{html.escape(text)}</pre>'

    def _show_error(self, exc: Exception) -> None:
        self.status.value = error_html(exc)
