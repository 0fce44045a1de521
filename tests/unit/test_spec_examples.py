"""The examples run as plain local processes (no GPU, no ML framework needed).

Each task gets the environment contract from :mod:`jupyter_pai.backends.envcontract` and
runs the script :func:`jupyter_pai.runtime.task_script` writes, the way the local backend does.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from jupyter_pai.backends.envcontract import (
    Placement,
    job_environment,
    port_requests,
    task_environment,
    task_keys,
)
from jupyter_pai.runtime import task_script
from jupyter_pai.spec import parse_job, redact, secret_values
from tests.spec_corpus import example_files

EXPECTED_OUTPUT = {
    "pytorch-single-gpu.yaml": ["epoch 3/3", "tracking key set: True", "done"],
    "tensorflow-ps-worker.yaml": ["all 2 workers done", "worker 1 reported to ps"],
    "pytorch-ddp-torchrun.yaml": ["all 2 ranks met", "--nnodes=2 --node_rank=1"],
    "cpu-only.yaml": ["shard 4/4: 1000 records", "[post] shard 3 finished"],
    "short-form.yaml": ["hello from worker 1 (rank 1 of 2)", "peers: 127.0.0.1:"],
    "openpai-v1-ps-worker.json": [
        "ps: all 2 workers reported",
        "ps got worker 1 model resnet20",
        "worker 0: data=/tmp/openpai-v1/data model=resnet20",
        "ps 0: data=/tmp/openpai-v1/data output=/tmp/openpai-v1/output model=resnet20 batch_size=32",
    ],
}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _has_ml_framework() -> bool:
    import importlib.util

    return any(importlib.util.find_spec(m) for m in ("torch", "tensorflow"))


@pytest.mark.skipif(shutil.which("bash") is None, reason="the local backend runs tasks with bash")
@pytest.mark.parametrize("path", example_files(), ids=lambda p: p.name)
def test_example_runs_as_local_processes(path: Path, tmp_path: Path) -> None:
    if _has_ml_framework():
        pytest.skip("a real ML framework is installed: the examples would really train")
    job = parse_job(path.read_text(), name=path.stem.replace("-", "_")).job
    placements = {
        key: Placement(
            "127.0.0.1",
            {
                label: [_free_port() for _ in range(n)]
                for label, n in port_requests(job, key[0]).items()
            },
        )
        for key in task_keys(job)
    }
    shared = job_environment(
        job,
        job_id=f"alice~{job.name}",
        user="alice",
        virtual_cluster=job.virtual_cluster,
        placements=placements,
        master_port=_free_port(),
    )
    base_env = {
        **os.environ,
        "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""),
        "PYTHONUNBUFFERED": "1",
    }
    base_env.pop("CUDA_VISIBLE_DEVICES", None)
    procs = []
    for role, index in task_keys(job):
        env = {
            **base_env,
            **task_environment(job, shared, role=role, index=index, placements=placements),
        }
        script = tmp_path / f"{role}-{index}.sh"
        script.write_text(task_script(job, role, backend="local"))
        procs.append(
            (
                role,
                index,
                subprocess.Popen(
                    ["bash", str(script)],
                    env=env,
                    cwd=tmp_path,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    text=True,
                ),
            )
        )
    deadline = time.monotonic() + 90
    outputs: list[str] = []
    failures: list[str] = []
    for role, index, proc in procs:
        try:
            out, _ = proc.communicate(timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            proc.kill()
            out, _ = proc.communicate()
            failures.append(f"{role}[{index}] timed out")
        outputs.append(out)
        if proc.returncode != 0:
            failures.append(f"{role}[{index}] exited {proc.returncode}:\n{out}")
    assert not failures, "\n".join(failures)
    everything = "\n".join(outputs)
    for expected in EXPECTED_OUTPUT[path.name]:
        assert expected in everything, everything
    # The secret was used, and its value is what redact() would remove from the logs.
    for value in secret_values(job):
        assert value not in redact(everything, secret_values(job))
