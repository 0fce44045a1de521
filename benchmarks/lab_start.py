"""``./scripts/lab.sh`` started again with nothing changed, against ``jupyter lab`` from the
same virtual environment: seconds from the command to ``/lab`` answering 200, runs
alternated side by side. The first run of lab.sh may install (it is reported apart).

Goal: lab.sh within 1.5x of plain ``jupyter lab`` when nothing changed (it reinstalls only
when the package's metadata, the lab extension's sources or dependencies changed).

    python benchmarks/lab_start.py [--runs 5]
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VENV = Path(os.environ.get("JUPYTER_PAI_VENV", ROOT / ".venv"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def started(command: list[str], port: int, home: Path, timeout: float) -> float:
    """Seconds until ``/lab`` answers 200; the server is stopped after."""
    env = {
        **os.environ,
        "JUPYTER_PAI_STATE_DIR": str(home / "state"),
        "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
        "PATH": f"{VENV / 'bin'}:{os.environ['PATH']}",
    }
    args = [*command, f"--port={port}", "--IdentityProvider.token=", "--ServerApp.password="]
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        args,
        cwd=home,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        while True:
            if proc.poll() is not None:
                err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
                raise RuntimeError(f"{command[0]} exited with {proc.returncode}:\n{err[-3000:]}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/lab", timeout=2) as resp:
                    if resp.status == 200:
                        return time.perf_counter() - t0
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            if time.perf_counter() - t0 > timeout:
                raise TimeoutError(f"{command[0]}: /lab did not answer within {timeout:.0f} s")
            time.sleep(0.05)
    finally:
        stop(proc)


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is not None:
        return
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--timeout", type=float, default=600, help="per start, seconds")
    args = parser.parse_args()
    lab_sh = [str(ROOT / "scripts" / "lab.sh")]
    plain = [str(VENV / "bin" / "jupyter"), "lab", "--ip=127.0.0.1", "--no-browser"]
    if os.geteuid() == 0:
        plain.append("--allow-root")
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        first = started(lab_sh, free_port(), home, args.timeout)
        print(f"first lab.sh (may install): {first:6.2f} s")
        times: dict[str, list[float]] = {"lab.sh": [], "jupyter lab": []}
        for _ in range(args.runs):
            times["jupyter lab"].append(started(plain, free_port(), home, args.timeout))
            times["lab.sh"].append(started(lab_sh, free_port(), home, args.timeout))
    med = {name: statistics.median(values) for name, values in times.items()}
    for name, values in times.items():
        print(
            f"{name:12s} to /lab: median {med[name]:5.2f} s, "
            f"min {min(values):5.2f} s, max {max(values):5.2f} s ({len(values)} runs)"
        )
    ratio = med["lab.sh"] / med["jupyter lab"]
    print(f"ratio lab.sh / jupyter lab: {ratio:.2f}x (goal <= 1.5x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
