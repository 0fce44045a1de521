"""Writing parameters into a bash script."""

from __future__ import annotations

import re

from ..spec.templating import MARKER

_SPECIAL = re.compile(r'([\\"$`])')


def shell_word(text: str) -> str:
    """``text`` as one double-quoted word. ``<% $secrets.x %>`` markers stay as written:
    on Kubernetes they become ``${PAI_SECRET_x}``, which must expand inside the quotes."""
    out: list[str] = []
    pos = 0
    for m in MARKER.finditer(text):
        if m["scope"] != "secrets":
            continue
        out.append(_SPECIAL.sub(r"\\\1", text[pos : m.start()]))
        out.append(m.group(0))
        pos = m.end()
    out.append(_SPECIAL.sub(r"\\\1", text[pos:]))
    return '"' + "".join(out) + '"'


def quoted_message(text: str) -> str:
    """A line that prints ``text`` to stderr (where users read the task's log)."""
    return f"echo {shell_word(text)} >&2"
