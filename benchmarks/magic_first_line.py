"""``%%pai run`` on the local backend: time from sending the cell to a real kernel until its
first output line arrives (and until the cell ends), against IPython's own
``%%script <python>`` running the same cell as a plain subprocess (the baseline).

Goal: the first line of a one-task ``%%pai run`` within 0.5 s of the cell
starting. The first ``%%pai run`` of a kernel also pays for importing and starting the
client; it is reported apart ("cold").

    python benchmarks/magic_first_line.py [--runs 10]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from queue import Empty

from jupyter_client.manager import KernelManager

CELL = "print('first line', flush=True)\nimport time\ntime.sleep(0.2)\nprint('last line')\n"


def run_cell(kc: object, code: str, marker: str, timeout: float = 60) -> tuple[float, float]:
    """(seconds to the first stream output containing ``marker``, seconds to idle)."""
    t0 = time.perf_counter()
    msg_id = kc.execute(code)  # type: ignore[attr-defined]
    first = None
    while True:
        try:
            msg = kc.get_iopub_msg(timeout=timeout)  # type: ignore[attr-defined]
        except Empty:
            raise TimeoutError(f"no output from {code!r}") from None
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        kind, content = msg["msg_type"], msg["content"]
        if kind == "stream" and first is None and marker in content["text"]:
            first = time.perf_counter() - t0
        elif kind == "error":
            raise RuntimeError("\n".join(content["traceback"]))
        elif kind == "status" and content["execution_state"] == "idle":
            if first is None:
                raise RuntimeError(f"{code!r} never printed {marker!r}")
            return first, time.perf_counter() - t0


def summary(name: str, values: list[tuple[float, float]]) -> tuple[float, float]:
    firsts, ends = [v[0] for v in values], [v[1] for v in values]
    med_first, med_end = statistics.median(firsts), statistics.median(ends)
    print(
        f"{name:38s} first line: median {med_first * 1000:6.0f} ms, max {max(firsts) * 1000:6.0f} ms;"
        f"  cell done: median {med_end * 1000:6.0f} ms"
    )
    return med_first, med_end


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="pai-magic-bench-") as tmp:
        env = {
            **os.environ,
            "JUPYTER_PAI_STATE_DIR": str(Path(tmp) / "state"),
            "JUPYTER_PAI_LOCAL_GPUS": "4",
            "JUPYTER_PAI_BACKEND": "local",
        }
        km = KernelManager(kernel_name="python3")
        km.start_kernel(env=env, cwd=tmp)
        kc = km.blocking_client()
        kc.start_channels()
        try:
            kc.wait_for_ready(timeout=60)
            run_cell(kc, "%load_ext jupyter_pai\nprint('loaded')", "loaded")
            cold = run_cell(kc, "%%pai run --name cold\n" + CELL, "first line")
            pai = [
                run_cell(kc, f"%%pai run --name warm-{i}\n" + CELL, "first line")
                for i in range(args.runs)
            ]
            script = [
                run_cell(kc, f"%%script {sys.executable} -u\n" + CELL, "first line")
                for _ in range(args.runs)
            ]
        finally:
            kc.stop_channels()
            km.shutdown_kernel(now=True)
    print(f"one-task cell, {args.runs} runs each, {os.cpu_count()} CPUs")
    print(
        f"{'%%pai run, cold (first of the kernel)':38s} first line: {cold[0] * 1000:6.0f} ms;"
        f"  cell done: {cold[1] * 1000:6.0f} ms"
    )
    pai_first, pai_end = summary("%%pai run (local backend)", pai)
    base_first, base_end = summary("%%script python (baseline)", script)
    print(
        f"ratio first line {pai_first / base_first:.1f}x, cell done {pai_end / base_end:.1f}x;"
        f" goal first line <= 500 ms: {'met' if pai_first <= 0.5 else 'NOT met'}"
    )


if __name__ == "__main__":
    main()
