"""Parameters injected into a notebook as papermill injects them."""

from __future__ import annotations

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from jupyter_pai.submission.parameters import inject_parameters, parse_value


def notebook(tagged: bool = True) -> nbformat.NotebookNode:
    params = new_code_cell("alpha = 0.1\nname = 'x'")
    if tagged:
        params.metadata["tags"] = ["parameters"]
    return new_notebook(
        cells=[new_markdown_cell("# title"), params, new_code_cell("print(alpha, name)")]
    )


def test_values_are_read_as_papermill_reads_them() -> None:
    assert [parse_value(v) for v in ("3", "0.5", "1e-3", "True", "None", "adam")] == [
        3,
        0.5,
        0.001,
        True,
        None,
        "adam",
    ]


def test_the_injected_cell_follows_the_parameters_cell() -> None:
    nb = notebook()
    out = inject_parameters(nb, {"alpha": 0.5, "name": "run 2"})
    assert [c.source for c in out.cells][1:3] == [
        "alpha = 0.1\nname = 'x'",
        "# Parameters\nalpha = 0.5\nname = 'run 2'\n",
    ]
    assert out.cells[2].metadata["tags"] == ["injected-parameters"]
    assert out.metadata["jupyter_pai"]["parameters"] == {"alpha": 0.5, "name": "run 2"}
    assert len(nb.cells) == 3  # the source notebook is left as it was
    # Run again: the earlier injection is replaced, not stacked.
    again = inject_parameters(out, {"alpha": 1})
    assert [c.source for c in again.cells].count("# Parameters\nalpha = 1\n") == 1
    assert len(again.cells) == 4


def test_without_a_parameters_cell_they_go_first() -> None:
    out = inject_parameters(notebook(tagged=False), {"alpha": 2})
    assert out.cells[0].source == "# Parameters\nalpha = 2\n"
    plain = notebook()
    assert [c.source for c in inject_parameters(plain, {}).cells] == [c.source for c in plain.cells]
