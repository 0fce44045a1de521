"""Parameters injected into a notebook as papermill injects them, so notebooks written for
papermill run unchanged: after the first cell tagged ``parameters`` (or at the top when
there is none) comes a cell tagged ``injected-parameters`` that assigns each value, and
later cells see the new values."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import nbformat

PARAMETERS_TAG = "parameters"
INJECTED_TAG = "injected-parameters"


def parse_value(text: str) -> Any:
    """A ``--param k=v`` value as papermill's ``-p`` reads it: ``True``/``False``/``None``,
    an int, a float, else the text itself."""
    named = {"True": True, "False": False, "None": None}
    if text in named:
        return named[text]
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            continue
    return text


def inject_parameters(
    nb: nbformat.NotebookNode, params: Mapping[str, Any]
) -> nbformat.NotebookNode:
    """A copy of ``nb`` with the ``injected-parameters`` cell (replacing an earlier one, as
    papermill does when a notebook is run again)."""
    nb = _copy(nb)
    nb.cells = [c for c in nb.cells if INJECTED_TAG not in c.get("metadata", {}).get("tags", [])]
    if not params:
        return nb
    lines = ["# Parameters"] + [f"{name} = {value!r}" for name, value in params.items()]
    cell = nbformat.v4.new_code_cell("\n".join(lines) + "\n")
    cell.metadata["tags"] = [INJECTED_TAG]
    at = next(
        (
            i + 1
            for i, c in enumerate(nb.cells)
            if PARAMETERS_TAG in c.get("metadata", {}).get("tags", [])
        ),
        0,
    )
    nb.cells.insert(at, cell)
    nb.metadata.setdefault("jupyter_pai", {})["parameters"] = dict(params)
    return nb


def _copy(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    return nbformat.reads(nbformat.writes(nb), as_version=4)
