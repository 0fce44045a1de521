"""OpenPAI's abnormal-job rule with its thresholds."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from jupyter_pai.backends.abnormal import abnormal_reasons
from jupyter_pai.backends.models import JobState, JobSummary

NOW = datetime(2026, 11, 23, 12, 0, tzinfo=timezone.utc)
RULE = {"days": 5.0, "percent": 10.0, "grace": 10.0, "now": NOW}


def job(running: timedelta, gpus: int = 1) -> JobSummary:
    return JobSummary(
        id="alice~j",
        name="j",
        user="alice",
        state=JobState.RUNNING,
        virtual_cluster="default",
        submission_time=NOW - running - timedelta(minutes=1),
        launched_time=NOW - running,
        total_gpu_number=gpus,
    )


def test_running_over_five_days() -> None:
    assert abnormal_reasons(job(timedelta(days=5, hours=1)), 50, **RULE) == [
        "running for 5.0 days (over 5.0 days)"
    ]
    assert abnormal_reasons(job(timedelta(days=4, hours=23)), 50, **RULE) == []


def test_idle_gpus_over_the_last_hour() -> None:
    assert abnormal_reasons(job(timedelta(hours=2)), 3.5, **RULE) == [
        "GPU utilisation 3.5 % over the last hour (under 10 %)"
    ]
    assert abnormal_reasons(job(timedelta(hours=2)), 10, **RULE) == []


def test_both_reasons_at_once() -> None:
    assert len(abnormal_reasons(job(timedelta(days=6)), 0, **RULE)) == 2


def test_not_measured_just_started_or_no_gpu_is_not_idle() -> None:
    assert abnormal_reasons(job(timedelta(hours=2)), None, **RULE) == []
    assert abnormal_reasons(job(timedelta(minutes=5)), 0, **RULE) == []
    assert abnormal_reasons(job(timedelta(hours=2), gpus=0), 0, **RULE) == []


def test_spans_read_in_the_unit_that_fits() -> None:
    from jupyter_pai.backends.abnormal import span

    assert [span(s) for s in (8, 600, 7200, 86400 * 5.25)] == [
        "8 seconds",
        "10 minutes",
        "2.0 hours",
        "5.2 days",
    ]


def test_thresholds_are_settings() -> None:
    rule = {**RULE, "days": 1.0, "percent": 50.0, "grace": 0.0}
    assert len(abnormal_reasons(job(timedelta(days=2)), 40, **rule)) == 2
