"""Modules planted in a working folder, each of which says when a process imports it: a
``json.py``, a ``multiprocessing.py`` and a ``jupyter_pai`` package shadowing the real one.
A Python child of the server that puts its working folder on ``sys.path`` runs them."""

from __future__ import annotations

from pathlib import Path

PLANTED = ("json.py", "multiprocessing.py", "jupyter_pai/__init__.py")


def plant(folder: Path) -> Path:
    """Plant the modules in ``folder``; the folder their markers appear in."""
    markers = folder / "ran"
    markers.mkdir(parents=True)
    for name in PLANTED:
        module = folder / name
        module.parent.mkdir(parents=True, exist_ok=True)
        marker = markers / name.replace("/", "-")
        module.write_text(
            "import os, sys\n"
            f"with open({str(marker)!r}, 'a') as f:\n"
            "    f.write(f'{os.getpid()} {sys.argv!r}\\n')\n"
        )
    return markers


def ran(markers: Path) -> dict[str, str]:
    """The planted modules that ran, with the processes (pid, argv) that ran them."""
    return {path.name: path.read_text() for path in sorted(markers.iterdir())}
