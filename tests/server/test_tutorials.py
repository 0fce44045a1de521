"""The tutorial notebooks in examples/ executed by nbclient on the local backend (4
simulated GPU slots, a state directory of the test's), their printed results checked."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from ..tutorials import (
    EXAMPLES,
    check_getting_started,
    check_pytorch_ddp,
    check_remote_gpu_kernel,
    execute_command,
    python,
    read,
    tutorial_env,
)


def run_notebook(name: str, tmp_path: Path, timeout: int = 240) -> Path:
    work = tmp_path / "examples"
    shutil.copytree(EXAMPLES, work)
    notebook = work / name
    done = subprocess.run(
        execute_command(python(), notebook, timeout),
        # As in an activated environment: `!jupyter ...` is this Python's; kernelspecs
        # installed with --user land in the test's folder.
        env=tutorial_env(
            tmp_path / "state",
            {
                "PATH": os.pathsep.join([str(Path(python()).parent), os.environ["PATH"]]),
                "JUPYTER_DATA_DIR": str(tmp_path / "jupyter-data"),
            },
        ),
        cwd=work,
        capture_output=True,
        text=True,
        timeout=timeout + 60,
    )
    assert done.returncode == 0, f"{name} failed:\n{done.stderr[-5000:]}"
    return notebook


def test_getting_started(tmp_path: Path) -> None:
    check_getting_started(read(run_notebook("getting-started.ipynb", tmp_path)))


def test_pytorch_ddp_with_torchrun_on_gloo(tmp_path: Path) -> None:
    # torchrun and torch come from the machine (scripts/test.sh installs Debian's
    # python3-torch); the tasks find torchrun on PATH as a user's would.
    check_pytorch_ddp(read(run_notebook("pytorch-ddp.ipynb", tmp_path, timeout=400)))


def test_remote_gpu_kernel(tmp_path: Path) -> None:
    check_remote_gpu_kernel(read(run_notebook("remote-gpu-kernel.ipynb", tmp_path)))
