"""The job a notebook becomes (``jupyter pai submit analysis.ipynb``, the panel's "Run as
PAI job"; :mod:`.notebooks` submits it): parameters injected as papermill does, the
notebook and its runner (:mod:`.nbrunner`) shipped inside the command, the executed
notebook written to the output path.

Where the result goes: next to the source by default — the local backend's task runs on
this machine and writes it there — or into a storage (``storage="work/results"``): the
task mounts it and writes under its mount path, which is how a pod on Kubernetes, with no
access to this machine's files, returns the notebook.
"""

from __future__ import annotations

import asyncio
import base64
import gzip
import re
import shlex
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import nbformat

from ..backends.base import Backend
from ..backends.models import NotebookJobRequest
from ..errors import FieldError, SpecError
from .parameters import inject_parameters, parse_value

RUNNER = Path(__file__).with_name("nbrunner.py")
#: A notebook larger than this (gzipped, outputs dropped) does not fit in a command.
MAX_PAYLOAD = 512 * 1024


@dataclass(frozen=True)
class NotebookRun:
    """A notebook to run as a job, and how: the CLI's options, the REST API's request."""

    #: The notebook on this machine.
    source: str | Path
    #: Injected as papermill does (values read as its ``-p`` reads them).
    params: Mapping[str, str] = field(default_factory=dict)
    gpus: int = 0
    #: the GPU type (``H100-80GB``); None: any
    gpu_type: str | None = None
    vc: str | None = None
    image: str | None = None
    #: The job's name (default: the notebook's name and the time).
    name: str | None = None
    #: ``NAME[/folder]``: write the executed notebook into this storage.
    storage: str | None = None
    #: Where the executed notebook goes (default: ``<job name>.ipynb`` beside the source).
    output: str | Path | None = None

    @classmethod
    def requested(cls, request: NotebookJobRequest, source: str | Path) -> NotebookRun:
        """The REST API's request (and the client's), ``request.path`` found at ``source``."""
        return cls(
            source,
            params=request.params,
            gpus=request.gpus,
            gpu_type=request.gpu_type,
            vc=request.vc,
            image=request.image,
            name=request.name,
            storage=request.storage,
        )


@dataclass
class NotebookJob:
    """The short-form job to submit, and where its executed notebook will be."""

    job: dict[str, Any]
    #: Where the task writes the executed notebook (a path on the task's side).
    output: str
    #: The working directory its task should run in (the source's folder), if local.
    working_dir: str | None


def job_name(source: Path) -> str:
    stem = re.sub(r"[^A-Za-z0-9_-]+", "-", source.stem).strip("-") or "notebook"
    return f"{stem[:40]}-{time.strftime('%Y%m%d-%H%M%S')}"


def read_notebook(source: Path) -> nbformat.NotebookNode:
    try:
        return nbformat.read(source, as_version=4)
    except FileNotFoundError:
        raise SpecError([FieldError("file", f"no notebook {source}")]) from None
    except Exception as exc:  # nbformat raises several kinds for a file that is not one
        raise SpecError([FieldError("file", f"{source} is not a notebook: {exc}")]) from None


def payload(nb: nbformat.NotebookNode) -> str:
    """The notebook without its old outputs, gzipped and base64-encoded."""
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    packed = gzip.compress(nbformat.writes(nb).encode("utf-8"), mtime=0)
    if len(packed) > MAX_PAYLOAD:
        raise SpecError(
            [
                FieldError(
                    "file",
                    f"the notebook is {len(packed) // 1024} KiB gzipped without outputs; at most {MAX_PAYLOAD // 1024} KiB fit in a job",
                )
            ]
        )
    return base64.b64encode(packed).decode("ascii")


def runner_command(nb: nbformat.NotebookNode, output: str, python: str) -> str:
    runner = base64.b64encode(RUNNER.read_bytes()).decode("ascii")
    return (
        'd="$(mktemp -d)" && '
        f'printf %s {runner} | base64 -d > "$d/nbrunner.py" && '
        f'printf %s {payload(nb)} | base64 -d > "$d/input.ipynb.gz" && '
        f'{python} "$d/nbrunner.py" "$d/input.ipynb.gz" {shlex.quote(output)}'
    )


def notebook_job(
    run: NotebookRun, *, storage_mount: str | None = None, python: str = "python3"
) -> NotebookJob:
    """The job that runs ``run.source`` with its parameters; the executed notebook goes
    into ``run.storage``, mounted at ``storage_mount`` (the storage's mount path) in the
    task, if it names one."""
    path = Path(run.source).expanduser().resolve()
    nb = inject_parameters(read_notebook(path), {k: parse_value(v) for k, v in run.params.items()})
    nb.metadata.setdefault("jupyter_pai", {})["source"] = path.name
    job_name_ = run.name or job_name(path)
    job: dict[str, Any] = {
        "name": job_name_,
        "gpus": run.gpus,
        **({"gpuType": run.gpu_type} if run.gpu_type else {}),
        "instances": 1,
        "description": f"notebook {path.name} (executed copy: see the job's log)",
    }
    working_dir: str | None = str(path.parent)
    output = run.output
    if run.storage:
        store, _, folder = run.storage.partition("/")
        if not storage_mount:
            raise SpecError([FieldError("storage", f"storage {store!r} has no mount path")])
        job["storages"] = [store]
        where = PurePosixPath(storage_mount) / folder / f"{job_name_}.ipynb"
        target = str(
            where if output is None else PurePosixPath(storage_mount) / folder / str(output)
        )
        working_dir = None
    else:
        target = str(
            Path(output).expanduser().resolve() if output else path.parent / f"{job_name_}.ipynb"
        )
    job["command"] = runner_command(nb, target, python)
    if run.vc:
        job["vc"] = run.vc
    if run.image:
        job["image"] = run.image
    return NotebookJob(job=job, output=target, working_dir=working_dir)


async def prepare(backend: Backend, run: NotebookRun) -> NotebookJob:
    """:func:`notebook_job` for ``backend``: its tasks' Python (this one's where tasks run
    here; the image's elsewhere) and the storage's mount path."""
    mount = None
    if run.storage:
        store = run.storage.partition("/")[0]
        found = {s.name: s for s in await backend.storages()}
        if store not in found:
            known = ", ".join(sorted(found)) or "none"
            raise SpecError([FieldError("storage", f"no storage {store!r} (known: {known})")])
        mount = found[store].mount_path
        # Tasks that run here reach a storage through its folder, not through a mount.
        if backend.tasks_run_here:
            mount = backend.storage_folder(store) or mount
    if not run.storage and not backend.tasks_run_here:
        # A pod cannot write into this machine's files: the result would be lost.
        raise SpecError(
            [
                FieldError(
                    "storage",
                    f"on the {backend.name} backend a notebook job writes the executed notebook "
                    "into a storage: name one (NAME or NAME/folder)",
                )
            ]
        )
    python = shlex.quote(sys.executable) if backend.tasks_run_here else "python3"
    return await asyncio.to_thread(notebook_job, run, storage_mount=mount, python=python)
