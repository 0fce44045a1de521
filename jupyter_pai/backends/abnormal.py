"""OpenPAI's "abnormal job" rule, thresholds given: running too long, or holding GPUs
it barely uses. Pure."""

from __future__ import annotations

from datetime import datetime, timezone

from .models import JobSummary


def span(seconds: float) -> str:
    """``5.2 days``, ``3.0 hours``, ``12 minutes``, ``8 seconds``."""
    for unit, size in (("days", 86400), ("hours", 3600)):
        if seconds >= size:
            return f"{seconds / size:.1f} {unit}"
    if seconds >= 60:
        return f"{seconds / 60:.0f} minutes"
    return f"{seconds:.0f} seconds"


def abnormal_reasons(
    job: JobSummary,
    gpu_percent_last_hour: float | None,
    *,
    days: float,
    percent: float,
    grace: float,
    now: datetime | None = None,
) -> list[str]:
    """Why ``job`` (running) is abnormal; empty if it is not. A job whose GPU use is not
    measured (``None``) is never called idle."""
    now = now or datetime.now(timezone.utc)
    started = job.launched_time or job.submission_time
    running_s = (now - started).total_seconds()
    reasons = []
    if running_s > days * 86400:
        reasons.append(f"running for {span(running_s)} (over {span(days * 86400)})")
    if (
        job.total_gpu_number > 0
        and gpu_percent_last_hour is not None
        and running_s >= grace * 60
        and gpu_percent_last_hour < percent
    ):
        reasons.append(
            f"GPU utilisation {gpu_percent_last_hour:g} % over the last hour (under {percent:g} %)"
        )
    return reasons
