"""The widgets in a real kernel (nbclient): their updates must not wait for the kernel.

The monitor and a Job's live view are shown, then one cell submits a job and blocks the
kernel until long after the job has ended. nbclient keeps the widget state it receives
while cells run, and stops listening when the last cell ends: so the widgets can only
show the job SUCCEEDED if their updates were sent while the kernel was busy."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import nbformat

from ..tutorials import execute_command, python, tutorial_env, widget_models

CELLS = [
    "import jupyter_pai.widgets as pw\n"
    "from jupyter_pai import Client\n"
    "client = Client()\n"
    "pw.monitor(client, interval=0.2)",
    "job = client.submit({'name': 'busy-kernel', 'command': ['sleep 1', 'echo done']})\n"
    "pw.JobView(job, interval=0.2)",
    # The kernel is busy here: a blocking wait, then a sleep well past the job's end.
    "import time\njob.wait(timeout=60)\ntime.sleep(3)\nprint('the kernel was busy until now')",
]


def test_widgets_update_while_the_kernel_is_busy(tmp_path: Path) -> None:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source) for source in CELLS]
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    path = tmp_path / "busy.ipynb"
    nbformat.write(nb, path)
    done = subprocess.run(
        execute_command(python(), path, 120),
        env=tutorial_env(tmp_path / "state"),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr[-5000:]
    executed = json.loads(path.read_text())
    html = [str(m.get("value", "")) for m in widget_models(executed).values()]
    job_id = next(v for v in html if "busy-kernel" in v and "data-job-id" in v)
    assert job_id, "no widget shows the job"
    succeeded = [v for v in html if 'data-state="SUCCEEDED"' in v and "busy-kernel" in v]
    # The monitor's row and the job view's header both reached SUCCEEDED during the wait.
    assert len(succeeded) >= 2, f"widgets did not update while the kernel was busy: {html}"
    assert any("done" in v and "jp-pai-log" in v for v in html), "the job view's log tail"
