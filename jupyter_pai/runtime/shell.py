"""Writing values from a job file into a bash script: as data, never as code."""

from __future__ import annotations

import re
import shlex
from collections.abc import Collection

from ..spec.templating import MARKER

_SPECIAL = re.compile(r'([\\"$`])')


def _kept(m: re.Match[str], secrets: Collection[str]) -> bool:
    return m["scope"] == "secrets" and m["key"] is not None and m["key"] in secrets


def shell_word(text: str, secrets: Collection[str] = ()) -> str:
    """``text`` as one double-quoted word that bash reads back as written.

    ``<% $secrets.KEY %>`` stays as written only for a KEY in ``secrets`` (declared secrets
    the backend fills in: on Kubernetes the marker becomes ``${PAI_SECRET_KEY}``, which must
    expand inside the quotes). Every other marker, whatever it names, is text."""
    out: list[str] = []
    pos = 0
    for m in MARKER.finditer(text):
        if not _kept(m, secrets):
            continue
        out.append(_SPECIAL.sub(r"\\\1", text[pos : m.start()]))
        out.append(m.group(0))
        pos = m.end()
    out.append(_SPECIAL.sub(r"\\\1", text[pos:]))
    return '"' + "".join(out) + '"'


def split_words(text: str, secrets: Collection[str] = ()) -> list[str]:
    """``text`` split into words as a POSIX shell splits them (quotes, backslashes), with
    each ``<% $secrets.KEY %>`` of a KEY in ``secrets`` kept whole inside its word.
    ValueError for unbalanced quotes."""
    kept: list[str] = []
    # A character the text does not hold stands in for each marker while splitting.
    stand_in = "\ue000"
    while stand_in in text:
        stand_in = chr(ord(stand_in) + 1)

    def hide(m: re.Match[str]) -> str:
        if not _kept(m, secrets):
            return m.group(0)
        kept.append(m.group(0))
        return f"{stand_in}{len(kept) - 1}{stand_in}"

    hidden = MARKER.sub(hide, text)
    pattern = re.compile(f"{stand_in}([0-9]+){stand_in}")
    return [pattern.sub(lambda m: kept[int(m[1])], w) for w in shlex.split(hidden)]


def quoted_message(text: str) -> str:
    """A line that prints ``text`` to stderr (where users read the task's log)."""
    return f"echo {shell_word(text)} >&2"
