"""This machine's CPU and memory use for the local backend's hardware view (psutil).

CPU use is measured between two samples of the CPU times, as ``top`` does, over at least
``MIN_SPAN`` seconds: a request sooner than that after the last sample gets the last figure,
since a few milliseconds of counters say nothing. The samples are this object's own, so
another user of psutil's ``cpu_percent`` does not move them."""

from __future__ import annotations

import threading
import time
from typing import Any

import psutil

MIN_SPAN = 1.0


def _idle(times: Any) -> float:
    return float(times.idle + getattr(times, "iowait", 0.0))


class HostUsage:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sample = (time.monotonic(), psutil.cpu_times())
        self._cpu: float | None = None

    def percentages(self) -> tuple[float | None, float]:
        """(CPU busy %, None until a first span has passed; memory in use %). Reads
        /proc: call it in a thread."""
        with self._lock:
            now, times = time.monotonic(), psutil.cpu_times()
            then, before = self._sample
            if now - then >= MIN_SPAN:
                total = sum(times) - sum(before)
                if total > 0:
                    busy = 1 - (_idle(times) - _idle(before)) / total
                    self._cpu = round(100 * min(1.0, max(0.0, busy)), 1)
                self._sample = (now, times)
            cpu = self._cpu
        return cpu, round(psutil.virtual_memory().percent, 1)
