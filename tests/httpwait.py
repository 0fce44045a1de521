"""Waiting for a task's web port (TensorBoard, a stand-in server) to answer over HTTP."""

from __future__ import annotations

import asyncio
import time
import urllib.error
import urllib.request


def http_status(url: str) -> int | None:
    """The status a GET of ``url`` answers with, or None while nothing answers."""
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return int(response.status)
    except (urllib.error.URLError, OSError):
        return None


async def wait_for_http_ok(url: str, timeout: float) -> int | None:
    """Poll ``url`` (off the event loop) until it answers 200 or ``timeout`` seconds pass;
    the last status seen (None: nothing answered)."""
    deadline = time.monotonic() + timeout
    status = await asyncio.to_thread(http_status, url)
    while status != 200 and time.monotonic() < deadline:
        await asyncio.sleep(0.5)
        status = await asyncio.to_thread(http_status, url)
    return status
