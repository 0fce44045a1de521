"""What Kueue (+ JobSet) and HiveD add to the test control plane's `up`: the time from
`ControlPlane.up` to a cluster ready for tests (every component healthy, queues open or
active, runner ready), alternating three configurations in each round so a shared
machine's load hits them alike:

* baseline: Volcano only (`Options(kueue=False, hived=False)`);
* `+kueue`: Volcano, Kueue and JobSet;
* `+kueue+hived`: everything (the default, what the test fixture starts).

    python benchmarks/cluster_up.py --rounds 3

Prints each run, then the median per configuration and its ratio to the baseline.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.cluster import controlplane  # noqa: E402

CONFIGS = {
    "baseline (volcano)": {"kueue": False, "hived": False},
    "+kueue": {"kueue": True, "hived": False},
    "+kueue+hived": {"kueue": True, "hived": True},
}


def one_up(directory: Path, settings: dict[str, bool]) -> float:
    plane = controlplane.ControlPlane(directory)
    start = time.monotonic()
    try:
        plane.up(controlplane.Options(tie_to_parent=True, **settings))
        return time.monotonic() - start
    finally:
        plane.down()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    times: dict[str, list[float]] = {name: [] for name in CONFIGS}
    with tempfile.TemporaryDirectory(prefix="pai-bench-up-") as tmp:
        for round_ in range(args.rounds):
            for name, settings in CONFIGS.items():
                took = one_up(Path(tmp) / "cluster", settings)
                times[name].append(took)
                print(f"round {round_ + 1} {name}: up in {took:.1f} s", flush=True)
    base = statistics.median(times["baseline (volcano)"])
    print(f"\nmedians over {args.rounds} rounds (load average {os.getloadavg()[0]:.1f}):")
    for name, runs in times.items():
        median = statistics.median(runs)
        print(f"  {name:20s} {median:6.1f} s  x{median / base:.2f}  (+{median - base:.1f} s)")


if __name__ == "__main__":
    main()
