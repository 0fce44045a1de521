"""The task's shell lines that start a remote kernel, run by a real bash with stand-ins for
ipykernel and the launcher that record what they were given: the connection file holds the
key and the ports, and neither process has a secret in its environment or arguments."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from jupyter_pai.kernels.launcher import start_commands

# The launcher's stand-in waits until the kernel's has recorded: while it lives it is the
# kernel's parent (a kernel outliving it would be adopted by init).
RECORDER = """
import json, os, sys, time
folder = os.environ["RECORD_DIR"]
name = "kernel" if "ipykernel_launcher" in sys.argv else "launcher"
with open(os.path.join(folder, name + ".tmp"), "w") as f:
    json.dump({"argv": sys.argv, "env": dict(os.environ), "pid": os.getpid(),
               "ppid": os.getppid(), "sid": os.getsid(0)}, f)
os.rename(os.path.join(folder, name + ".tmp"), os.path.join(folder, name + ".json"))
deadline = time.monotonic() + 20
while name == "launcher" and time.monotonic() < deadline:
    if os.path.exists(os.path.join(folder, "kernel.json")):
        break
    time.sleep(0.01)
"""


def run(tmp_path: Path, curve: bool) -> tuple[dict, dict, dict]:
    recorder = tmp_path / "recorder.py"
    recorder.write_text(RECORDER)
    # "python" is a stand-in that records, for both ipykernel and the launcher.
    python = tmp_path / "python"
    python.write_text(f'#!/bin/sh\nexec {sys.executable} {recorder} "$@"\n')
    python.chmod(0o755)
    lines = [
        'JUPYTER_PAI_KERNEL_KEY="${PAI_SECRET_kernelKey}"',
        *(
            ['JUPYTER_PAI_CURVE_PUBLICKEY="pub-1"', 'JUPYTER_PAI_CURVE_SECRETKEY="sec-1"']
            if curve
            else []
        ),
        *start_commands(f"{python} -m launcher", str(python), 42.0, curve),
    ]
    script = "set -o errexit -o pipefail\n(\n" + "\n".join(lines) + "\n)\n"
    env = {
        "PATH": os.environ["PATH"],
        "TMPDIR": str(tmp_path),
        "RECORD_DIR": str(tmp_path),
        "PAI_SECRET_kernelKey": "k3y-value",
        "PAI_SECRET_other": "other-secret",
        "PAI_CONTAINER_HOST_kernel_PORT_LIST": "30000,30001,30002,30003,30004,30005",
        "JUPYTER_PAI_POD_LOOPBACK": "127.1.2.3",
        "PAI_CURRENT_CONTAINER_IP": "10.0.0.7",
    }
    subprocess.run(["bash", "-c", script], env=env, check=True, timeout=30)
    deadline = time.monotonic() + 10  # the kernel runs in the background
    while not (tmp_path / "kernel.json").exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    kernel = json.loads((tmp_path / "kernel.json").read_text())
    launcher = json.loads((tmp_path / "launcher.json").read_text())
    connection_file = kernel["argv"][kernel["argv"].index("-f") + 1]
    return kernel, launcher, json.loads(Path(connection_file).read_text())


@pytest.mark.parametrize("curve", [False, True], ids=["loopback", "curve"])
def test_the_shell_starts_the_kernel_and_the_launcher_without_secrets(
    tmp_path: Path, curve: bool
) -> None:
    kernel, launcher, connection = run(tmp_path, curve)
    expected = {
        "shell_port": 30000, "iopub_port": 30001, "stdin_port": 30002, "control_port": 30003,
        "hb_port": 30004, "ip": "10.0.0.7" if curve else "127.1.2.3", "key": "k3y-value",
        "transport": "tcp", "signature_scheme": "hmac-sha256",
    }  # fmt: skip
    if curve:
        expected.update(curve_publickey="pub-1", curve_secretkey="sec-1")
    assert connection == expected
    folder = Path(kernel["argv"][kernel["argv"].index("-f") + 1]).parent
    assert folder.parent == tmp_path and (folder.stat().st_mode & 0o777) == 0o700
    for seen in (kernel, launcher):
        text = json.dumps(seen)
        for secret in ("k3y-value", "other-secret", "sec-1", "pub-1"):
            assert secret not in text, seen["argv"]
        assert not [n for n in seen["env"] if n.startswith(("PAI_SECRET_", "JUPYTER_PAI_K"))]
    # The launcher is the task (the shell became it) and the kernel's parent; the kernel
    # is in a session of its own and ends with the launcher (JPY_PARENT_PID).
    assert kernel["ppid"] == launcher["pid"] == int(kernel["env"]["JPY_PARENT_PID"])
    assert kernel["sid"] == kernel["pid"] != launcher["sid"]
    assert launcher["argv"][-6:] == [
        "--idle-seconds", "42", "--kernel", str(kernel["pid"]), "--connection-file",
        str(folder / "kernel.json"),
    ]  # fmt: skip


def test_a_job_without_the_kernel_ports_fails_saying_so(tmp_path: Path) -> None:
    script = "\n".join(start_commands("true", "python3", 1.0, False))
    done = subprocess.run(
        ["bash", "-c", "set -o errexit\n" + script],
        env={"PATH": os.environ["PATH"], "PAI_CONTAINER_HOST_kernel_PORT_LIST": "1,2"},
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 1
    assert "the job holds no 6 ports labelled kernel" in done.stderr
