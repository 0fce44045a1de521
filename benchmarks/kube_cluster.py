"""The benchmarks' own test control plane (tests/cluster): started in a temporary
directory, stopped on the way out; or a running one with ``--cluster-dir``."""

from __future__ import annotations

import contextlib
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from tests.cluster import controlplane


@contextlib.contextmanager
def cluster(
    existing: str | None = None,
    *,
    gpu_nodes: bool = True,
    runner: bool = False,
    schedulers: bool = True,
    volcano_schedule_period: str | None = None,
) -> Iterator[controlplane.State]:
    if existing:
        state = controlplane.State.load(Path(existing))
        if state is None:
            raise SystemExit(f"no cluster in {existing}")
        yield state
        return
    with tempfile.TemporaryDirectory(prefix="pai-bench-") as tmp:
        plane = controlplane.ControlPlane(Path(tmp) / "cluster")
        t0 = time.monotonic()
        options = controlplane.Options(tie_to_parent=True)
        if not runner:  # the node whose pods really run (tests/cluster/runner)
            options.runner_pool = None
        if not schedulers:  # kube-scheduler alone: Volcano, Kueue and HiveD cost CPU idle
            options.volcano = options.kueue = options.hived = False
        if not gpu_nodes:
            options.gpu_pool = None
        options.volcano_schedule_period = volcano_schedule_period
        state = plane.up(options)
        print(f"cluster up in {time.monotonic() - t0:.1f}s ({plane.directory})", flush=True)
        try:
            yield state
        finally:
            plane.down()
