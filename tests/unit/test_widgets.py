"""The notebook widgets' logic without a browser: ipywidgets models over a real
``jupyter_pai.Client`` on the local backend (4 simulated GPU slots, a temporary state
directory), read and clicked as a front end would."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from IPython.core.interactiveshell import InteractiveShell

from jupyter_pai.backends.models import JobState
from jupyter_pai.notebook.client import Client
from jupyter_pai.widgets import JobView, Launcher, Monitor, launcher, register
from jupyter_pai.widgets.jobview import WIDGET_MIME, duration, job_mimebundle


@pytest.fixture
def client(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Client]:
    monkeypatch.setenv("JUPYTER_PAI_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("JUPYTER_PAI_LOCAL_GPUS", "4")
    monkeypatch.setenv("JUPYTER_PAI_BACKEND", "local")
    c = Client(working_dir=tmp_path)
    yield c
    for job in c.jobs(state=["WAITING", "RUNNING"]):
        c.job(job.id).stop()
    c.close()


def eventually(check: Callable[[], bool], timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.1)


def test_launcher_shows_free_gpus_bounds_the_count_and_submits(client: Client) -> None:
    form = Launcher(client, live=False)
    assert form.vc.options == (("default — 4 of 4 GPUs free", "default"),)
    assert form.gpus.max == 4
    catalogue = [i.uri for i in client.images()]
    assert [value for _, value in form.image.image.options] == catalogue
    assert form.image.value == catalogue[0]

    form.gpus.value = 3
    form.instances.value = 2  # 6 GPUs: more than the VC can ever hold
    assert form.button.disabled
    assert "can hold at most 4" in form.total.value

    form.instances.value = 1
    form.gpus.value = 2
    form.name.value = "from-form"
    form.command.value = "echo launched by the form\nsleep 30\n"
    assert not form.button.disabled
    form.button.click()

    assert form.job is not None and form.job.id.endswith("~from-form")
    assert "from-form" in form.status.value
    spec = client.job(form.job.id).detail.spec
    worker = spec["taskRoles"]["worker"]
    assert worker["resourcePerInstance"]["gpu"] == 2
    assert worker["commands"] == ["echo launched by the form", "sleep 30"]
    # The VC label is read again after the submission: the job holds 2 of the 4 GPUs.
    eventually(lambda: client.job(form.job.id).state == JobState.RUNNING)
    form.refresh_vcs()
    assert form.vc.options[0][0] == "default — 2 of 4 GPUs free"
    assert "waits for GPUs" not in form.total.value
    form.gpus.value = 3
    assert "waits for GPUs to free up" in form.total.value


def test_launcher_reports_what_was_wrong_and_submits_nothing(client: Client) -> None:
    form = launcher(client, live=False)
    form.command.value = "   "
    form.button.click()
    assert "command: enter the command" in form.status.value
    assert client.jobs() == []

    form.name.value = "twice"
    form.command.value = "true"
    form.button.click()
    assert form.job is not None
    form.button.click()  # the same name again: the backend's 409, shown, nothing new
    assert "is taken" in form.status.value
    assert [j.name for j in client.jobs()] == ["twice"]


def test_monitor_lists_jobs_shows_a_log_and_stops_a_job(client: Client) -> None:
    done = client.submit({"name": "done", "gpus": 1, "command": ["echo line-$RANK"]})
    done.wait(timeout=30)
    long = client.submit({"name": "long", "gpus": 2, "command": ["echo started", "sleep 60"]})
    eventually(lambda: long.state == JobState.RUNNING)

    table = Monitor(client, live=False)
    assert [r.name.description for r in table.rows.values()] == ["long", "done"]
    row = table.rows[long.id]
    assert 'data-state="RUNNING"' in row.state.value
    assert row.gpus.value == "2"
    assert not row.stop.disabled
    assert table.rows[done.id].stop.disabled
    assert 'data-state="SUCCEEDED"' in table.rows[done.id].state.value

    table.rows[done.id].name.click()
    assert table.selected == done.id
    assert "line-0" in table.log_view.value
    assert table.rows[done.id].name.button_style == "info"

    row.stop.click()
    eventually(lambda: long.state == JobState.STOPPED)
    table.refresh()
    assert 'data-state="STOPPED"' in table.rows[long.id].state.value
    assert table.rows[long.id].stop.disabled


def test_monitor_updates_itself_without_being_asked(client: Client) -> None:
    table = Monitor(client, interval=0.2)
    try:
        assert "no jobs yet" in table.status.value
        job = client.submit({"name": "later", "command": ["sleep 1", "echo finished"]})
        eventually(lambda: job.id in table.rows)
        table.select(job.id)
        eventually(lambda: 'data-state="SUCCEEDED"' in table.rows[job.id].state.value)
        eventually(lambda: "finished" in table.log_view.value)
        assert table.status.value == ""
    finally:
        table.close()
    table.ticker.join(timeout=5)  # type: ignore[union-attr]
    assert not table.ticker.running  # type: ignore[union-attr]


def test_job_view_follows_the_job_until_it_ends(client: Client) -> None:
    job = client.submit(
        {"name": "viewed", "instances": 2, "command": ["echo hello from $RANK", "sleep 1"]}
    )
    view = JobView(job, interval=0.2)
    assert view.ticker is not None
    assert view.task_picker.options == ("worker-0", "worker-1")
    eventually(lambda: 'data-state="SUCCEEDED"' in view.header.value)
    view.ticker.join(timeout=5)
    assert not view.ticker.running  # it stops by itself once the job has ended
    view.task_picker.value = "worker-1"
    assert "hello from 1" in view.log_view.value
    assert "worker-1" in view.tasks.value

    ended = JobView(client.job(job.id))  # an ended job: no ticker, its log read at once
    assert ended.ticker is None
    assert "hello from 0" in ended.log_view.value
    assert "<table" in ended.tasks.value and "<table" not in ended.header.value


def test_a_job_displays_as_html_and_text_outside_a_kernel(client: Client) -> None:
    job = client.submit({"name": "shown", "command": ["true"]})
    job.wait(timeout=30)
    bundle = job_mimebundle(job)
    assert WIDGET_MIME not in bundle  # no kernel here: nothing could render a widget
    assert 'data-job-id="' + job.id + '"' in bundle["text/html"]
    assert bundle["text/plain"].startswith(f"<Job {job.id} SUCCEEDED")

    shell = InteractiveShell.instance()
    try:
        assert register(shell)
        data, _ = shell.display_formatter.format(job)
        assert 'data-state="SUCCEEDED"' in data["text/html"]
    finally:
        InteractiveShell.clear_instance()


def test_duration_counts_waiting_then_running_time(client: Client) -> None:
    job = client.submit({"name": "timed", "command": ["sleep 2"]})
    detail = job.wait(timeout=30)
    assert detail.launched_time is not None and detail.completed_time is not None
    seconds = int(duration(detail).removesuffix("s"))
    assert 1 <= seconds <= 10
