"""This machine's GPUs as NVML reads them, for the local backend's utilisation. Nothing
(``None``) where there is no NVIDIA driver or GPU: a machine without GPUs, or simulated
slots, are not measured rather than shown idle.

NVML keeps no hour of history: the server samples each GPU when utilisation is asked for
and keeps the last hour of its own samples."""

from __future__ import annotations

import threading
import time
from collections import deque
from typing import Any

from ..utilisation import GpuReading

HOUR = 3600.0
MIB = 1024 * 1024


class NvmlGpus:
    def __init__(self) -> None:
        self._nvml: Any = None
        self._failed: str | None = None
        self._lock = threading.Lock()
        self._history: dict[str, deque[tuple[float, float, float]]] = {}

    def _init(self) -> Any:
        if self._nvml is None and self._failed is None:
            try:
                import pynvml

                pynvml.nvmlInit()
                self._nvml = pynvml
            except Exception as error:  # no module, no driver, no GPU: all mean "not measured"
                self._failed = f"NVML unavailable ({type(error).__name__}: {error})"
        return self._nvml

    @property
    def note(self) -> str | None:
        return self._failed

    def readings(self) -> dict[str, GpuReading] | None:
        """Device index → reading; ``None`` where NVML cannot measure (see :attr:`note`).
        Blocking: call it in a thread."""
        with self._lock:
            nvml = self._init()
            if nvml is None:
                return None
            count = nvml.nvmlDeviceGetCount()
            if count == 0:
                self._failed = "NVML sees no GPU on this machine"
                return None
            now = time.monotonic()
            out = {}
            for i in range(count):
                handle = nvml.nvmlDeviceGetHandleByIndex(i)
                percent = float(nvml.nvmlDeviceGetUtilizationRates(handle).gpu)
                memory = nvml.nvmlDeviceGetMemoryInfo(handle).used / MIB
                samples = self._history.setdefault(str(i), deque())
                samples.append((now, percent, memory))
                while samples and samples[0][0] < now - HOUR:
                    samples.popleft()
                out[str(i)] = GpuReading(
                    percent=percent,
                    memory_mb=round(memory, 1),
                    hour_percent=round(sum(s[1] for s in samples) / len(samples), 1),
                    hour_memory_mb=round(max(s[2] for s in samples), 1),
                )
            return out
