"""Writing values from a job file into a bash script: as data, never as code."""

from __future__ import annotations

import re
from collections.abc import Collection

from ..spec.templating import MARKER, kept_secret

_SPECIAL = re.compile(r'([\\"$`])')


def shell_word(text: str, secrets: Collection[str] = ()) -> str:
    """``text`` as one double-quoted word that bash reads back as written.

    ``<% $secrets.KEY %>`` stays as written only for a KEY in ``secrets`` (declared secrets
    the backend fills in: on Kubernetes the marker becomes ``${PAI_SECRET_KEY}``, which must
    expand inside the quotes). Every other marker, whatever it names, is text."""
    out: list[str] = []
    pos = 0
    for m in MARKER.finditer(text):
        if not kept_secret(m, secrets):
            continue
        out.append(_SPECIAL.sub(r"\\\1", text[pos : m.start()]))
        out.append(m.group(0))
        pos = m.end()
    out.append(_SPECIAL.sub(r"\\\1", text[pos:]))
    return '"' + "".join(out) + '"'


def quoted_message(text: str) -> str:
    """A line that prints ``text`` to stderr (where users read the task's log)."""
    return f"echo {shell_word(text)} >&2"
