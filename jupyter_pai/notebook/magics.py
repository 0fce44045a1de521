"""``%load_ext jupyter_pai``: the ``%pai`` line magic and the ``%%pai run`` cell magic.

The magics are a thin shell over :class:`~jupyter_pai.Client` (the backend configured for
this machine, as ``jupyter pai`` uses it); their tables are the CLI's (:mod:`.tables`).
``jupyter_pai.load_ipython_extension`` registers them."""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from typing import Any, NoReturn

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_cell_magic, magics_class

from ..backends.models import JobState
from ..submission.jobs import parse_gpus, parse_params
from .cellrun import CellOptions, run_cell
from .client import Client
from .job import Job
from .storage import UploadedFile
from .tables import print_detail, print_images, print_jobs, print_vcs

HELP = """\
%pai jobs [--state S] [--vc V] [--keyword K]   your jobs, newest first
%pai vcs                                       virtual clusters: GPUs used, free, queued
%pai images                                    images: the catalogue and registry tags
%pai show ID                                   a job's detail and tasks
%pai logs ID [--role R] [--index I] [--tail N] [-f]
                                               a task's log (-f: follow until it ends)
%pai stop ID                                   stop a job
%pai submit FILE [--param K=V]... [--vc V] [--name N] [--wait]
                                               submit a job file; returns the Job
%pai ls [STORAGE[/PATH]]                       the storages, or a storage folder's entries
%pai upload SRC STORAGE[/PATH] [--piece-mb N]  upload a file or folder of this machine
%pai download STORAGE/PATH [DST]               download a file or folder (default: here)

%%pai run [--vc V] [--gpus [TYPE:]N] [--instances M] [--image I] [--name NAME] [--detach]
    Run this cell's code as a job: every instance runs the cell as a Python file with
    the job's environment (RANK, WORLD_SIZE, MASTER_ADDR, PAI_*, CUDA_VISIBLE_DEVICES).
    Each task's output streams here as it is written, each line labelled [role-index];
    the cell ends with the job's outcome (a failed job raises JobFailed with the failing
    task's last lines). Interrupting the cell stops the job. --detach submits and returns
    the Job at once.
    The cell runs in the job's processes, not in this kernel: variables it defines are
    the job's, not the notebook's, and it cannot see the notebook's variables either —
    pass data through files or storage.
"""


class _Parser(argparse.ArgumentParser):
    """argparse that reports a mistake as a UsageError instead of exiting the kernel."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.prog}: {message}\n\n{HELP}")

    def exit(self, status: int = 0, message: str | None = None) -> NoReturn:
        raise UsageError(message or HELP)


def line_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="%pai", add_help=False)
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    p = sub.add_parser("jobs", add_help=False)
    p.add_argument("--state", action="append")
    p.add_argument("--vc")
    p.add_argument("--keyword")
    sub.add_parser("vcs", add_help=False)
    sub.add_parser("images", add_help=False)
    sub.add_parser("help", add_help=False)
    for name in ("show", "stop"):
        sub.add_parser(name, add_help=False).add_argument("id")
    p = sub.add_parser("logs", add_help=False)
    p.add_argument("id")
    p.add_argument("--role")
    p.add_argument("--index", type=int, default=0)
    p.add_argument("--tail", type=int)
    p.add_argument("-f", "--follow", action="store_true")
    p = sub.add_parser("submit", add_help=False)
    p.add_argument("file")
    p.add_argument("--param", action="append", default=[], metavar="K=V")
    p.add_argument("--vc")
    p.add_argument("--name")
    p.add_argument("--wait", action="store_true")
    p = sub.add_parser("ls", add_help=False)
    p.add_argument("where", nargs="?", metavar="STORAGE/PATH")
    p = sub.add_parser("upload", add_help=False)
    p.add_argument("src")
    p.add_argument("where", metavar="STORAGE/PATH")
    p.add_argument("--piece-mb", type=float, default=8)
    p = sub.add_parser("download", add_help=False)
    p.add_argument("where", metavar="STORAGE/PATH")
    p.add_argument("dst", nargs="?", default=".")
    return parser


def storage_path(where: str, command: str) -> tuple[str, str]:
    """``STORAGE/PATH`` (or ``STORAGE:PATH``) as (storage, path)."""
    name, _, path = where.replace(":", "/", 1).partition("/")
    if not name or ".." in path.split("/"):
        raise UsageError(
            f"%pai {command}: {where!r} is not STORAGE/PATH (a storage's name, then a path "
            f"inside it, e.g. work/data)\n\n{HELP}"
        )
    return name, path.strip("/")


def cell_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="%%pai run", add_help=False)
    parser.add_argument("command", choices=["run"])
    parser.add_argument("--vc")
    parser.add_argument("--gpus", default="0")
    parser.add_argument("--instances", type=int, default=1)
    parser.add_argument("--image")
    parser.add_argument("--name")
    parser.add_argument("--detach", action="store_true")
    return parser


def write(text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()


@magics_class
class PAIMagics(Magics):
    """``%pai …`` and ``%%pai run …``."""

    def __init__(self, shell: Any, client: Client | None = None) -> None:
        super().__init__(shell)
        self._client = client

    @property
    def client(self) -> Client:
        if self._client is None:
            self._client = Client()
        return self._client

    @line_cell_magic
    def pai(self, line: str, cell: str | None = None) -> Any:
        try:
            words = shlex.split(line)
        except ValueError as exc:
            raise UsageError(f"%pai: {exc}") from None
        if cell is not None:
            return self.run(cell_parser().parse_args(words), cell)
        if not words or words[0] in ("help", "-h", "--help"):
            print(HELP)
            return None
        args = line_parser().parse_args(words)
        return getattr(self, f"do_{args.command}")(args)

    def run(self, args: argparse.Namespace, cell: str) -> Job | None:
        gpu_type, gpus = parse_gpus(args.gpus)
        options = CellOptions(
            vc=args.vc,
            gpus=gpus,
            gpu_type=gpu_type,
            instances=args.instances,
            image=args.image,
            name=args.name,
            detach=args.detach,
        )
        return run_cell(self.client, cell, options, write)

    def do_jobs(self, args: argparse.Namespace) -> None:
        states = [s for v in args.state or [] for s in v.split(",") if s] or None
        found = self.client.jobs(state=states, vc=args.vc, keyword=args.keyword)
        if not found:
            print("no jobs")
            return
        print_jobs(found)

    def do_vcs(self, args: argparse.Namespace) -> None:
        print_vcs(self.client.vcs())

    def do_images(self, args: argparse.Namespace) -> None:
        print_images(self.client.image_choices())

    def do_show(self, args: argparse.Namespace) -> None:
        print_detail(self.client.job(args.id).detail)

    def do_logs(self, args: argparse.Namespace) -> None:
        job = self.client.job(args.id)
        if args.follow:
            for text in job.logs(args.role, args.index, follow=True, tail=args.tail):
                write(text)
        else:
            write(job.logs(args.role, args.index, tail=args.tail))

    def do_stop(self, args: argparse.Namespace) -> None:
        detail = self.client.job(args.id).stop()
        print(f"{detail.id}: {detail.state.value}")

    def do_submit(self, args: argparse.Namespace) -> Job:
        params = parse_params(args.param)
        if args.file.endswith(".ipynb"):
            job = self.client.submit_notebook(args.file, params, vc=args.vc, name=args.name)
            print(f"the executed notebook will be {job.executed_notebook}")
        else:
            job = self.client.submit(args.file, params, vc=args.vc, name=args.name)
        print(f"submitted {job.id} ({job.detail.state.value})")
        if args.wait:
            detail = job.wait(check=False)
            print(f"{job.id}: {detail.state.value}")
            if detail.state is not JobState.SUCCEEDED:
                job.wait(check=True)
        return job

    def do_ls(self, args: argparse.Namespace) -> None:
        if not args.where:
            for s in self.client.storage():
                mode = "read-only" if s.read_only else "writable"
                print(f"{s.name}\t{s.mount_path}\t{mode}")
            return
        name, path = storage_path(args.where, "ls")
        for entry in self.client.storage(name).ls(path):
            size = "" if entry.type == "directory" else str(entry.size or 0)
            print(f"{entry.name}{'/' if entry.type == 'directory' else ''}\t{size}")

    def do_upload(self, args: argparse.Namespace) -> list[UploadedFile]:
        name, path = storage_path(args.where, "upload")
        if not args.piece_mb > 0:
            raise UsageError(f"%pai upload: --piece-mb {args.piece_mb}: must be more than 0")
        if not os.path.exists(args.src):
            raise UsageError(f"%pai upload: no file or folder {args.src!r} on this machine")
        # "work/" (nothing after the storage): into its top folder.
        dst = path + "/" if path and args.where.endswith("/") else path
        done = self.client.storage(name).upload(args.src, dst, piece_mb=args.piece_mb)
        print(f"uploaded {len(done)} file(s), {sum(f.size for f in done)} bytes to {name}")
        return done

    def do_download(self, args: argparse.Namespace) -> None:
        name, path = storage_path(args.where, "download")
        written = self.client.storage(name).download(path, args.dst)
        print(f"downloaded {name}/{path} to {written}")
