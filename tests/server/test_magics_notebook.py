"""The ``%pai`` magics in a real kernel on the local backend: ``tests/notebooks/magics.ipynb``
executed with nbclient (both ranks' lines of a 2-instance ``%%pai run``, the failing
task's traceback, ``%pai jobs``, ``--detach``, variables staying in the job, an
interrupted cell stopping its job)."""

from __future__ import annotations

from pathlib import Path

from jupyter_pai import Client
from tests.notebook_run import check_magics_notebook


async def test_magics_notebook_on_the_local_backend(pai_state_dir: Path, tmp_path: Path) -> None:
    client = Client()
    try:
        await check_magics_notebook(tmp_path, client)
    finally:
        await client.close_async()
