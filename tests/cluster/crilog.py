"""Container logs in the CRI format that kwok's log server reads (as a kubelet does):
`<RFC3339Nano time> <stream> <F|P> <text>` per line."""

from __future__ import annotations

import datetime
import threading
from pathlib import Path
from typing import BinaryIO


def _now() -> bytes:
    now = datetime.datetime.now(datetime.timezone.utc)
    return now.strftime("%Y-%m-%dT%H:%M:%S.%f000Z").encode()


class CriLogWriter:
    """Appends lines from several streams to one CRI log file."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._file = open(path, "ab", buffering=0)
        self._lock = threading.Lock()

    def write(self, stream: str, text: bytes, *, partial: bool = False) -> None:
        tag = b"P" if partial else b"F"
        with self._lock:
            if self._file.closed:  # the pod is gone; a process it left may still write
                return
            self._file.write(b" ".join([_now(), stream.encode(), tag, text]) + b"\n")

    def pump(self, stream: str, source: BinaryIO) -> None:
        """Copy `source` line by line until EOF (runs in its own thread)."""
        pending = b""
        while chunk := source.read1(65536):  # type: ignore[attr-defined]
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for line in lines:
                self.write(stream, line)
        if pending:
            self.write(stream, pending)

    def close(self) -> None:
        with self._lock:
            self._file.close()
