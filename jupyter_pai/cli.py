"""``jupyter pai …``: submit, list, inspect, follow and stop jobs from a terminal or CI.

It talks to the configured backend directly (the local state directory, or the cluster
with the user's kubeconfig), so it sees the same jobs as the Jupyter server.

Exit codes: 0 ok; 1 a waited-for job ended FAILED or STOPPED; 2 invalid input; 3 not
found; 4 conflict (name taken); 5 backend unreachable; 6 refused (forbidden). ``check``:
6 when a permission is missing, else 5 when the cluster or a service it uses does not answer.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Sequence
from typing import Any

import yaml
from pydantic import BaseModel

from .backends.base import Backend, LogQuery
from .backends.gputypes import UNKNOWN
from .backends.models import (
    FieldWarning,
    JobDetail,
    JobFilter,
    JobList,
    JobState,
    VirtualClusterList,
)
from .errors import Conflict, FieldError, Forbidden, NotFound, PAIError, SpecError, Unavailable
from .notebook.connection import BackendConnection
from .notebook.tables import print_detail, print_images, print_jobs, print_vcs
from .spec.parse import parse_job
from .submission.images import ImagePolicy
from .submission.jobs import JobRequest, parse_gpus, parse_params, submit_job

EXIT_JOB_FAILED = 1
EXIT_INVALID = 2
EXIT_NOT_FOUND = 3
EXIT_CONFLICT = 4
EXIT_UNAVAILABLE = 5
EXIT_FORBIDDEN = 6

WAIT_POLL_SECONDS = 1.0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="jupyter pai", description="OpenPAI-style GPU jobs on the configured backend."
    )
    parser.add_argument("--backend", help="local or kubernetes (default: PAIConfig.backend)")
    sub = parser.add_subparsers(dest="command", required=True)

    def add(name: str, help_text: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_text, description=help_text)
        p.add_argument("--json", action="store_true", help="machine-readable output")
        return p

    p = add(
        "submit",
        "submit a job file (OpenPAI protocol v2 or short form; - for stdin), or run a "
        "notebook (.ipynb) as a job",
    )
    p.add_argument("file")
    p.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="K=V",
        help="set parameters.K (repeatable); for a notebook, injected as papermill does",
    )
    p.add_argument("--vc", help="virtual cluster (overrides defaults.virtualCluster)")
    p.add_argument("--name", help="job name (overrides name)")
    p.add_argument("--wait", action="store_true", help="wait until the job ends")
    nb = p.add_argument_group("notebooks (.ipynb)")
    nb.add_argument(
        "--gpus",
        default="0",
        metavar="[TYPE:]N",
        help="GPUs for the notebook's kernel (H100-80GB:2 for a type; see jupyter pai vcs)",
    )
    nb.add_argument("--image", help="image to run the notebook in")
    nb.add_argument(
        "--output", help="where the executed notebook goes (default: <job name>.ipynb beside it)"
    )
    nb.add_argument(
        "--storage",
        metavar="NAME[/FOLDER]",
        help="write the executed notebook into this storage (what a cluster's pods can reach)",
    )

    p = add("validate", "check a job file without submitting it")
    p.add_argument("file")
    p.add_argument("--param", action="append", default=[], metavar="K=V")
    p.add_argument(
        "--show",
        action="store_true",
        help="print the job as protocol-v2 YAML (what an OpenPAI v1 or short-form file becomes)",
    )

    p = add("jobs", "list jobs")
    p.add_argument("--state", action="append", help="WAITING, RUNNING, … (repeatable)")
    p.add_argument("--vc")
    p.add_argument("--user")
    p.add_argument("--keyword")

    p = add("show", "a job's detail and tasks")
    p.add_argument("id")

    p = add("logs", "a task's log")
    p.add_argument("id")
    p.add_argument("--role")
    p.add_argument("--index", type=int, default=0)
    p.add_argument("--tail", type=int, help="only the last N lines")
    p.add_argument("-f", "--follow", action="store_true", help="keep printing until the task ends")

    p = add("stop", "stop a job")
    p.add_argument("id")

    add("vcs", "virtual clusters: capacity, use and queue")
    p = add(
        "images",
        "images to choose from: the catalogue and the registries' repositories and tags, with"
        " age, size, CUDA and framework, scan severity and the GPU nodes that hold each",
    )
    p.add_argument("repository", nargs="?", help="only this repository (or its tags' prefix)")
    add(
        "check",
        "ask the cluster for every permission the backend needs (exit 6 when one is "
        "missing) and whether its scheduler, HiveD and Prometheus answer (exit 5 if not)",
    )

    p = sub.add_parser("kernelspec", help="remote GPU kernels' kernelspecs")
    kernelspec_sub = p.add_subparsers(dest="kernelspec_command", required=True)
    text = "write a kernelspec whose kernel runs as a job on the backend (pai-provisioner)"
    p = kernelspec_sub.add_parser("install", help=text, description=text)
    p.add_argument("name", help="the kernelspec's name (letters, digits, - . _)")
    p.add_argument("--vc", required=True, help="the virtual cluster the kernel queues in")
    p.add_argument(
        "--gpus",
        default="0",
        metavar="[TYPE:]N",
        help="GPUs the kernel holds (default 0); TYPE:N for a GPU type (H100-80GB:2)",
    )
    p.add_argument(
        "--image",
        default="",
        help="a catalogue name, a registry's tag, or any reference (unless the admin turns"
        " custom images off); see jupyter pai images",
    )
    p.add_argument("--cpu", type=float, help="CPUs (default: the job default)")
    p.add_argument("--memory-mb", type=int, help="memory in MB (default: the job default)")
    p.add_argument("--storage", action="append", default=[], help="a storage to mount (repeatable)")
    p.add_argument("--display-name", help="default: 'Python 3 — VC, N GPUs'")
    where = p.add_mutually_exclusive_group()
    where.add_argument(
        "--user", action="store_const", dest="scope", const="user", help="~/.local (default)"
    )
    where.add_argument(
        "--sys-prefix", action="store_const", dest="scope", const="sys-prefix", help="sys.prefix"
    )
    p.add_argument("--json", action="store_true", help="machine-readable output")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return asyncio.run(run(args))
    except KeyboardInterrupt:
        return 130


async def run(args: argparse.Namespace) -> int:
    try:
        if args.command == "validate":
            return validate(args)
        if args.command == "kernelspec":
            return await install_kernelspec(args)
        # The backend a notebook's Client() gets on this machine, configured alike.
        connection = BackendConnection(backend=args.backend)
        if args.command == "check":
            return await check(connection.pai_config.make_backend(), args)
        try:
            if args.command == "images":
                return await images(connection, args)
            backend = await connection.backend()
            if args.command == "submit":
                return await submit(backend, args, connection.image_policy())
            return int(await COMMANDS[args.command](backend, args))
        finally:
            await connection.close()
    except PAIError as exc:
        return report_error(exc, json_output=getattr(args, "json", False))


def read_source(path: str) -> str:
    if path == "-":
        return sys.stdin.read()
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError as exc:
        raise SpecError([FieldError("file", f"cannot read {path}: {exc.strerror}")]) from None


def validate(args: argparse.Namespace) -> int:
    parsed = parse_job(read_source(args.file), parameters=parse_params(args.param))
    if args.json:
        result: dict[str, Any] = {"valid": True, "warnings": [w.to_json() for w in parsed.warnings]}
        if args.show:
            result["job"] = parsed.document
        emit(result)
    elif args.show:
        print_warnings(parsed.warnings)
        print(yaml.safe_dump(parsed.document, sort_keys=False, allow_unicode=True), end="")
    else:
        print_warnings(parsed.warnings)
        job = parsed.job
        print(
            f"{job.name}: valid ({len(job.task_roles)} role(s), {job.total_instances} task(s), "
            f"{job.total_gpus} GPU(s), VC {job.virtual_cluster})"
        )
    return 0


async def submit(backend: Backend, args: argparse.Namespace, images: ImagePolicy) -> int:
    if args.file.endswith(".ipynb"):
        return await submit_notebook(backend, args, images)
    given = [f"--{k}" for k in ("image", "output", "storage") if getattr(args, k)]
    if args.gpus != "0":
        given.append("--gpus")
    if given:
        raise SpecError([FieldError(given[0], "only for a notebook (.ipynb); set it in the job")])
    request = JobRequest(read_source(args.file), parse_params(args.param), args.vc, args.name)
    result = await submit_job(backend, request.parse(), images=images)
    print_warnings(result.warnings)
    return await follow_submission(backend, result.job, args)


async def submit_notebook(backend: Backend, args: argparse.Namespace, images: ImagePolicy) -> int:
    # nbformat: imported only to run a notebook.
    from .submission import notebooks
    from .submission.nbjob import NotebookRun

    gpu_type, gpus = parse_gpus(args.gpus)
    run = NotebookRun(
        args.file,
        params=parse_params(args.param),
        gpus=gpus,
        gpu_type=gpu_type,
        vc=args.vc,
        image=args.image,
        name=args.name,
        storage=args.storage,
        output=args.output,
    )
    result = await notebooks.submit_notebook(backend, run, images=images)
    print_warnings(result.warnings)
    if not args.json:
        print(f"the executed notebook will be {result.output_location}")
    return await follow_submission(backend, result.job, args)


def print_warnings(warnings: Sequence[FieldError | FieldWarning]) -> None:
    for w in warnings:
        print(
            f"warning: {w.path}: {w.message}" if w.path else f"warning: {w.message}",
            file=sys.stderr,
        )


async def follow_submission(backend: Backend, job: JobDetail, args: argparse.Namespace) -> int:
    if not args.json:
        print(f"submitted {job.id} ({job.state.value})")
    if not args.wait:
        if args.json:
            emit(job)
        return 0
    while not job.state.terminal:
        await asyncio.sleep(WAIT_POLL_SECONDS)
        job = await backend.get_job(job.id)
    if args.json:
        emit(job)
    else:
        print(f"{job.id}: {job.state.value}" + (f" ({job.sub_state})" if job.sub_state else ""))
    return 0 if job.state == JobState.SUCCEEDED else EXIT_JOB_FAILED


async def jobs(backend: Backend, args: argparse.Namespace) -> int:
    states = [JobState(s.upper()) for v in args.state or [] for s in v.split(",")] or None
    found = await backend.list_jobs(
        JobFilter(vc=args.vc, state=states, user=args.user, keyword=args.keyword)
    )
    if args.json:
        emit(JobList(items=found, total=len(found)))  # the REST API's envelope, one page
        return 0
    print_jobs(found)
    return 0


async def show(backend: Backend, args: argparse.Namespace) -> int:
    job = await backend.get_job(args.id)
    if args.json:
        emit(job)
        return 0
    print_detail(job)
    return 0


async def logs(backend: Backend, args: argparse.Namespace) -> int:
    stream = await backend.logs(
        args.id, LogQuery(role=args.role, index=args.index, follow=args.follow, tail=args.tail)
    )
    out = sys.stdout.buffer
    async for chunk in stream.chunks:
        out.write(chunk)
        out.flush()
    return 0


async def stop(backend: Backend, args: argparse.Namespace) -> int:
    job = await backend.stop_job(args.id)
    if args.json:
        emit(job)
    else:
        print(f"{job.id}: {job.state.value}")
    return 0


async def vcs(backend: Backend, args: argparse.Namespace) -> int:
    found = await backend.virtual_clusters()
    if args.json:
        emit(VirtualClusterList(items=found))
        return 0
    print_vcs(found)
    return 0


async def check(backend: Backend, args: argparse.Namespace) -> int:
    """Not started: the check needs credentials, not the backend's watches."""
    report = await backend.self_check()
    if args.json:
        emit(report)
    else:
        print("\n".join(report.lines()))
    if report.missing:
        return EXIT_FORBIDDEN
    return 0 if report.ok else EXIT_UNAVAILABLE


async def install_kernelspec(args: argparse.Namespace) -> int:
    from .kernels.jobspec import KernelRequest
    from .kernels.kernelspec import install

    connection = BackendConnection(backend=args.backend)
    policy = connection.image_policy()
    policy.resolve(args.image, "--image")
    gpu_type, gpus = parse_gpus(args.gpus)
    try:
        if args.image and policy.catalogue is not None:
            problem = await policy.catalogue.check(args.image)
            if problem:
                raise SpecError([FieldError("--image", problem)])
        if gpu_type:
            await check_gpu_type(connection, args.vc, gpu_type)
    finally:
        await connection.close()
    request = KernelRequest(
        virtual_cluster=args.vc,
        gpus=gpus,
        gpu_type=gpu_type or "",
        image=args.image,
        cpu=args.cpu,
        memory_mb=args.memory_mb,
        storages=tuple(args.storage),
    )
    where = install(args.name, request, display=args.display_name, scope=args.scope or "user")
    if args.json:
        emit({"name": args.name, "path": where})
    else:
        print(f"installed kernelspec {args.name} in {where}")
    return 0


async def images(connection: BackendConnection, args: argparse.Namespace) -> int:
    choices = await connection.images()
    if args.repository:
        choices.repositories = [
            r for r in choices.repositories if args.repository in (r.name, r.uri)
        ] or [r for r in choices.repositories if r.uri.startswith(args.repository)]
    if args.json:
        emit(choices)
    else:
        print_images(choices)
    return 0


async def check_gpu_type(connection: BackendConnection, vc: str, gpu_type: str) -> None:
    """A type the VC lists, or a refusal offering the ones it does (with their free GPUs)."""
    try:
        vcs = await (await connection.backend()).virtual_clusters()
    except Unavailable as error:
        print(f"warning: cannot check GPU type {gpu_type!r} now: {error}", file=sys.stderr)
        return
    found = next((v for v in vcs if v.name == vc), None)
    types = [t for t in found.gpu_types if t.name != UNKNOWN] if found else []
    if found is None or not types:
        print(f"warning: VC {vc} lists no GPU types here: any GPU will do", file=sys.stderr)
        return
    if gpu_type not in {t.name for t in types}:
        offered = ", ".join(f"{t.name} ({t.free} of {t.capacity} free)" for t in types)
        raise SpecError([FieldError("--gpus", f"VC {vc} has no GPU type {gpu_type!r}: {offered}")])


COMMANDS = {"jobs": jobs, "show": show, "logs": logs, "stop": stop, "vcs": vcs}


# -- output ----------------------------------------------------------------------------


def emit(value: Any) -> None:
    print(json.dumps(to_jsonable(value), indent=2))


def to_jsonable(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", by_alias=True)
    if isinstance(value, list):
        return [to_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {k: to_jsonable(v) for k, v in value.items()}
    return value


def report_error(exc: PAIError, *, json_output: bool) -> int:
    if json_output:
        print(json.dumps(exc.to_json()), file=sys.stderr)
    else:
        print(f"error: {exc.message}", file=sys.stderr)
        for e in exc.errors[1:] if len(exc.errors) > 1 else []:
            print(f"  {e}", file=sys.stderr)
    codes: list[tuple[type[PAIError], int]] = [
        (NotFound, EXIT_NOT_FOUND),
        (Conflict, EXIT_CONFLICT),
        (Unavailable, EXIT_UNAVAILABLE),
        (Forbidden, EXIT_FORBIDDEN),
    ]
    return next((code for cls, code in codes if isinstance(exc, cls)), EXIT_INVALID)


if __name__ == "__main__":
    sys.exit(main())
