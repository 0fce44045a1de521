"""What the pages of a task's app run under when the server proxies them: a CSP sandbox
that gives them an opaque origin, and a first script with stand-ins for what such an
origin lacks (web storage, cookies), so apps written for an ordinary origin still start."""

from __future__ import annotations

import html
import re
from pathlib import Path

#: What a proxied page may do: run scripts, forms, pop-ups, downloads and dialogs, all in
#: an opaque origin (no ``allow-same-origin``), never navigate JupyterLab's own page.
SANDBOX = (
    "sandbox allow-scripts allow-forms allow-popups allow-downloads allow-modals "
    "allow-pointer-lock allow-presentation"
)
#: Where, under a port's link, the proxy itself serves the stand-ins (never the app).
SCRIPT_PATH = "__jupyter_pai__/sandbox.js"
SCRIPT = (Path(__file__).parent / "static" / "sandbox.js").read_bytes()
#: How much of a page is read, at most, looking for its ``<head>``.
SNIFF_BYTES = 16 * 1024

_HEAD = re.compile(rb"<head\b[^>]*>", re.IGNORECASE)
_DOCTYPE = re.compile(rb"\s*<!doctype[^>]*>", re.IGNORECASE)


class ScriptInjector:
    """Puts ``<script src=…>`` into an HTML page as it streams through: right after
    ``<head>``, else after the doctype (a script before it would switch the page to quirks
    mode), else first."""

    def __init__(self, src: str) -> None:
        self.tag = f'<script src="{html.escape(src)}"></script>'.encode()
        self._pending = bytearray()
        self._done = False

    def feed(self, chunk: bytes) -> bytes:
        if self._done:
            return chunk
        self._pending += chunk
        if _HEAD.search(self._pending) is None and len(self._pending) < SNIFF_BYTES:
            return b""
        return self._inject()

    def finish(self) -> bytes:
        return b"" if self._done else self._inject()

    def _inject(self) -> bytes:
        data = bytes(self._pending)
        self._pending.clear()
        self._done = True
        found = _HEAD.search(data) or _DOCTYPE.match(data)
        at = found.end() if found else 0
        return data[:at] + self.tag + data[at:]
