"""A plugin parameter's text split into words as a POSIX shell splits it (git's
``options``, as OpenPAI's GitPython splits them), secret markers kept whole."""

from __future__ import annotations

import re
import shlex
from collections.abc import Collection

from ..templating import MARKER, kept_secret


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
        if not kept_secret(m, secrets):
            return m.group(0)
        kept.append(m.group(0))
        return f"{stand_in}{len(kept) - 1}{stand_in}"

    hidden = MARKER.sub(hide, text)
    pattern = re.compile(f"{stand_in}([0-9]+){stand_in}")
    return [pattern.sub(lambda m: kept[int(m[1])], w) for w in shlex.split(hidden)]
