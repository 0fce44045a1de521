"""A job that did not succeed, as an exception a notebook shows well: which tasks failed,
their exit codes and the last lines each wrote — not a traceback of the magic's code."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..backends.models import JobDetail, JobState, TaskState

#: How many of a failing task's last lines the error shows.
TAIL_LINES = 15


@dataclass
class FailedTask:
    task: str
    exit_code: int | None
    reason: str | None
    last_lines: list[str] = field(default_factory=list)


class JobFailed(Exception):
    """The job ended FAILED or STOPPED (``detail`` says which), with each failed task's
    last lines.

    IPython renders it with :meth:`_render_traceback_`: the job's outcome and the tasks'
    output, where a Python traceback of the client would only hide them."""

    def __init__(self, detail: JobDetail, tasks: list[FailedTask]) -> None:
        self.detail = detail
        self.tasks = tasks
        super().__init__(self.summary())

    def summary(self) -> str:
        d = self.detail
        why = f" ({d.sub_state})" if d.sub_state else ""
        code = f", exit code {d.exit_code}" if d.exit_code not in (None, 0) else ""
        return f"job {d.id} {d.state.value}{why}{code}"

    def report(self) -> list[str]:
        lines = [self.summary()]
        for t in self.tasks:
            what = f"exit code {t.exit_code}" if t.exit_code is not None else "no exit code"
            lines.append(f"--- task {t.task} failed ({what}{f': {t.reason}' if t.reason else ''})")
            if t.last_lines:
                lines.append(f"    its last {len(t.last_lines)} line(s):")
                lines += [f"    {line}" for line in t.last_lines]
        return lines

    def __str__(self) -> str:
        return "\n".join(self.report())

    def _render_traceback_(self) -> list[str]:
        red, reset = "\x1b[0;31m", "\x1b[0m"
        head, *rest = self.report()
        return [f"{red}JobFailed{reset}: {head}", *rest]


def failed_tasks(detail: JobDetail) -> list[tuple[str, int, int | None, str | None]]:
    """(role, index, exit code, reason) of every task that failed; for a stopped job, none."""
    if detail.state is not JobState.FAILED:
        return []
    return [
        (t.role, t.index, t.exit_code, t.exit_reason)
        for t in detail.tasks
        if t.state is TaskState.FAILED
    ]
