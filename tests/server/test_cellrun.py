"""``%%pai run``'s core without a kernel (``run_cell`` over a Client on the local backend):
the cell's code reaches every task byte for byte, a queued job says why it waits, a failed
one raises ``JobFailed`` with its last lines."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from jupyter_pai import Client
from jupyter_pai.notebook.cellrun import CellOptions, run_cell
from jupyter_pai.notebook.outcome import JobFailed

from .pai import wait_for_file

TRICKY = """\
import os
text = 'quotes \\' " $HOME `date` <% $parameters.x %> ü ✓'
print(os.environ['RANK'], text)
"""


@pytest.fixture
def client(pai_state_dir: Path, tmp_path: Path) -> Iterator[Client]:
    made = Client(working_dir=tmp_path)
    yield made
    made.close()


def test_the_code_reaches_every_task_as_written(client: Client) -> None:
    lines: list[str] = []
    run_cell(client, TRICKY, CellOptions(instances=2, name="tricky"), lines.append)
    expected = "quotes ' \" $HOME `date` <% $parameters.x %> ü ✓"
    assert sorted(x for x in lines if not x.startswith("[pai]")) == [
        f"[worker-0] 0 {expected}\n",
        f"[worker-1] 1 {expected}\n",
    ]
    assert lines[-1].startswith("[pai] ") and "~tricky SUCCEEDED in " in lines[-1]


def test_a_queued_cell_says_why_then_runs(client: Client, tmp_path: Path) -> None:
    hog = client.submit({"name": "hog", "gpus": 4, "command": wait_for_file("go-hog")})
    lines: list[str] = []

    def write(text: str) -> None:
        lines.append(text)
        if "WAITING" in text:  # the cell is queued behind the hog: let the hog end
            (tmp_path / "go-hog").touch()

    run_cell(client, "print('my turn')", CellOptions(gpus=1, name="queued"), write)
    user = hog.id.split("~")[0]
    assert lines[0] == f"[pai] {user}~queued WAITING: waiting for 1 GPUs in VC default, 0 free\n"
    assert "[worker-0] my turn\n" in lines and (tmp_path / "go-hog").exists()


def test_a_failed_cell_raises_with_its_last_lines(client: Client) -> None:
    lines: list[str] = []
    with pytest.raises(JobFailed) as failed:
        run_cell(
            client,
            "print('last words')\nraise SystemExit(7)",
            CellOptions(name="dies"),
            lines.append,
        )
    assert failed.value.detail.state.value == "FAILED" and failed.value.detail.exit_code == 7
    (task,) = failed.value.tasks
    assert (task.task, task.exit_code, task.last_lines) == ("worker-0", 7, ["last words"])
    assert "[worker-0] last words\n" in lines
    detached = run_cell(client, "print(1)", CellOptions(name="later", detach=True), lines.append)
    assert detached is not None and detached.wait(60).state.value == "SUCCEEDED"
