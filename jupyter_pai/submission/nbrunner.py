"""Runs inside a notebook job's task: executes the notebook and writes it, outputs and
errors included, to the output path; exits 1 if a cell failed (the job then FAILS).

It is shipped in the job's command as its own file (:mod:`.nbjob`), so it needs only the
standard library, nbformat, nbclient and a ``python3`` kernel in the task's environment,
not jupyter_pai itself — any image papermill runs in.

    python nbrunner.py INPUT.ipynb.gz OUTPUT.ipynb
"""

from __future__ import annotations

import gzip
import os
import sys
import time


def main(argv: list[str]) -> int:
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    source, output = argv[1], argv[2]
    with gzip.open(source, "rt", encoding="utf-8") as f:
        nb = nbformat.read(f, as_version=4)
    code_cells = sum(1 for c in nb.cells if c.cell_type == "code")
    print(
        f"executing {code_cells} code cell(s); the executed notebook goes to {output}", flush=True
    )

    def on_cell_start(cell: object, cell_index: int, **_: object) -> None:
        print(f"cell {cell_index + 1}/{len(nb.cells)}", flush=True)

    client = NotebookClient(
        nb,
        kernel_name="python3",
        timeout=None,
        resources={"metadata": {"path": os.getcwd()}},
        on_cell_start=on_cell_start,
    )
    started = time.monotonic()
    failed = False
    try:
        client.execute()
    except CellExecutionError as error:
        failed = True
        print(str(error), file=sys.stderr, flush=True)
    finally:
        meta = nb.metadata.setdefault("jupyter_pai", {})
        meta["job"] = os.environ.get("PAI_JOB_NAME", "")
        meta["duration"] = round(time.monotonic() - started, 3)
        meta["status"] = "failed" if failed else "completed"
        os.makedirs(os.path.dirname(os.path.abspath(output)), exist_ok=True)
        partial = output + ".partial"
        nbformat.write(nb, partial)
        os.replace(partial, output)  # a reader never sees half a notebook
    print(f"wrote {output} ({'failed' if failed else 'completed'})", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
