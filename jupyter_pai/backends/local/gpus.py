"""Which GPU slots this machine offers: declared (``JUPYTER_PAI_LOCAL_GPUS``) or detected."""

from __future__ import annotations

import shutil
import subprocess


def parse_declared(value: str) -> list[str]:
    """``"4"`` → four slots ``0..3``; ``"0,2,5"`` → those device ids; ``""``/``"0"`` → none."""
    value = value.strip()
    if not value or value == "0":
        return []
    if value.isdigit():
        return [str(i) for i in range(int(value))]
    slots = [s.strip() for s in value.split(",") if s.strip()]
    if len(set(slots)) != len(slots):
        raise ValueError(f"JUPYTER_PAI_LOCAL_GPUS lists a device twice: {value!r}")
    return slots


def detect() -> list[str]:
    """Device indices seen by NVML, else ``nvidia-smi``; none on a machine without NVIDIA GPUs."""
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            return [str(i) for i in range(pynvml.nvmlDeviceGetCount())]
        finally:
            pynvml.nvmlShutdown()
    except Exception:
        pass
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return []
    try:
        out = subprocess.run(
            [smi, "--query-gpu=index", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=20,
            check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    return [line.strip() for line in out.splitlines() if line.strip().isdigit()]
