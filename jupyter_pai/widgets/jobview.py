"""How a job shows itself in a notebook: a live widget (state, tasks, the log's last lines,
updated until the job ends) where the front end renders widgets, plain HTML elsewhere
(nbconvert, GitHub, a front end without the widget manager).

A :class:`~jupyter_pai.notebook.job.Job` left as a cell's result displays this way once
:func:`register` has run (``import jupyter_pai.widgets`` and ``%load_ext jupyter_pai`` run
it): IPython's display formatters look the class up by name, so the job's module needs no
display code.
"""

from __future__ import annotations

import html
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

import ipywidgets as w

from ..backends.models import JobDetail, JobState, JobSummary
from .live import DEFAULT_INTERVAL, LiveBox, Ticker, error_html

if TYPE_CHECKING:
    from ..notebook.job import Job

JOB_MODULE = "jupyter_pai.notebook.job"
LOG_TAIL_LINES = 20
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"

STATE_COLOURS = {
    JobState.WAITING: "#b26b00",
    JobState.RUNNING: "#1565c0",
    JobState.SUCCEEDED: "#2e7d32",
    JobState.FAILED: "#c62828",
    JobState.STOPPING: "#6d4c41",
    JobState.STOPPED: "#616161",
}


def state_badge(state: JobState, job_id: str = "") -> str:
    colour = STATE_COLOURS.get(state, "#616161")
    return (
        f'<span class="jp-pai-state" data-job-id="{html.escape(job_id)}" '
        f'data-state="{state.value}" style="color:{colour};font-weight:600">{state.value}</span>'
    )


def duration(job: JobSummary, now: datetime | None = None) -> str:
    """Running time (to the end, once ended); time waited while WAITING; as ``1h 02m 03s``."""
    start = job.launched_time or job.submission_time
    end = job.completed_time or now or datetime.now(timezone.utc)
    seconds = max(0, int((end - start).total_seconds()))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h {minutes:02d}m {secs:02d}s"
    if minutes:
        return f"{minutes}m {secs:02d}s"
    return f"{secs}s"


def reason(job: JobSummary) -> str:
    return job.waiting_reason or job.sub_state or ""


def job_html(detail: JobDetail, log_tail: str | None = None) -> str:
    """The job as static HTML: header, tasks, and optionally a log tail."""
    e = html.escape
    rows = "".join(
        f"<tr><td>{e(t.role)}-{t.index}</td><td>{e(t.state.value)}</td>"
        f"<td>{e(','.join(t.gpus) or str(t.gpu_number))}</td>"
        f"<td>{'' if t.exit_code is None else t.exit_code}</td></tr>"
        for t in detail.tasks
    )
    why = f" — {e(reason(detail))}" if reason(detail) else ""
    parts = [
        f'<div class="jp-pai-job" data-job-id="{e(detail.id)}">',
        f"<b>{e(detail.id)}</b> {state_badge(detail.state, detail.id)}{why}<br>",
        f"VC {e(detail.virtual_cluster)} · {detail.total_gpu_number} GPU(s) · "
        f"{detail.total_task_number} task(s) · {duration(detail)}",
        '<table style="border-spacing:12px 2px"><tr><th>task</th><th>state</th>'
        "<th>GPUs</th><th>exit code</th></tr>",
        rows,
        "</table>",
    ]
    if log_tail:
        parts.append(f"<pre>{e(log_tail)}</pre>")
    parts.append("</div>")
    return "".join(parts)


def plain_text(detail: JobDetail) -> str:
    why = f" ({reason(detail)})" if reason(detail) else ""
    return f"<Job {detail.id} {detail.state.value}{why}>"


class JobView(LiveBox):
    """One job, kept current until it ends: header, tasks and the first task's log tail
    (a dropdown picks another task)."""

    def __init__(self, job: Job, *, interval: float = DEFAULT_INTERVAL, live: bool = True):
        self.job = job
        self.header = w.HTML()
        self.tasks = w.HTML()
        self.task_picker = w.Dropdown(description="log of", layout=w.Layout(width="auto"))
        self.log_view = w.HTML()
        self.error = w.HTML()
        super().__init__([self.header, self.tasks, self.task_picker, self.log_view, self.error])
        self.add_class("jp-pai-jobview")
        self.render(job.detail)
        self.task_picker.observe(lambda _: self.update_log(), names="value")
        if live and not job.detail.state.terminal:
            self.ticker = Ticker(self.update, interval, on_error=self._show_error).start()
        else:
            self.update_log()  # an ended job's log changes no more: read it once

    def render(self, detail: JobDetail) -> None:
        static = job_html(detail)
        head, _, rest = static.partition("<table")
        self.header.value = head + "</div>"
        self.tasks.value = "<table" + rest.removesuffix("</div>")
        keys = [f"{t.role}-{t.index}" for t in detail.tasks]
        if list(self.task_picker.options) != keys:
            self.task_picker.options = keys
        if keys and self.task_picker.value not in keys:
            self.task_picker.value = keys[0]
        self.task_picker.layout.display = "" if len(keys) > 1 else "none"

    def update(self) -> bool:
        """Read the job and its log tail again; False once it has ended (stop ticking)."""
        detail = self.job.refresh()
        self.render(detail)
        self.update_log()
        self.error.value = ""
        return not detail.state.terminal

    def update_log(self) -> None:
        key = self.task_picker.value
        if not key:
            return
        role, _, index = str(key).rpartition("-")
        text = self.job.logs(role, int(index), tail=LOG_TAIL_LINES)
        self.log_view.value = f'<pre class="jp-pai-log">{html.escape(text)}</pre>'

    def _show_error(self, exc: Exception) -> None:
        self.error.value = error_html(exc)


def job_mimebundle(job: Job, include: Any = None, exclude: Any = None) -> dict[str, Any]:
    """A live widget in a kernel (front ends with the widget manager render it); the HTML
    and text beside it are what other front ends and exported notebooks show."""
    bundle: dict[str, Any] = {
        "text/plain": plain_text(job.detail),
        "text/html": job_html(job.detail),
    }
    if _in_kernel():
        view = JobView(job)
        bundle[WIDGET_MIME] = {"version_major": 2, "version_minor": 0, "model_id": view.model_id}
    return bundle


def _in_kernel() -> bool:
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    return getattr(get_ipython(), "kernel", None) is not None


def register(ipython: Any = None) -> bool:
    """Make IPython display a ``Job`` as :func:`job_mimebundle` says; False outside IPython."""
    if ipython is None:
        try:
            from IPython import get_ipython
        except ImportError:
            return False
        ipython = get_ipython()
    if ipython is None:
        return False
    formatter = ipython.display_formatter.mimebundle_formatter
    formatter.for_type_by_name(JOB_MODULE, "Job", job_mimebundle)
    return True
