"""`python -m tests.cluster build|up|down|status`: the test control plane from a shell."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path

from . import build, controlplane, helm, manifests, prebuilt


def _shape(text: str, default: manifests.NodeShape) -> manifests.NodeShape:
    """`NODESxGPUS`, e.g. `1x4`; CPU and memory as the pytest plugin's default pool."""
    count, _, gpus = text.partition("x")
    return dataclasses.replace(default, count=int(count), gpus=int(gpus or 0))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.cluster")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser(
        "build",
        help="build (or reuse) the binaries, unpack Volcano's, Kueue's and JobSet's; print their dirs",
    )
    up = commands.add_parser("up", help="start a cluster in the background")
    up.add_argument("--dir", type=Path, default=None)
    up.add_argument(
        "--runner-only", action="store_true", help="no simulated GPU nodes: every pod really runs"
    )
    up.add_argument(
        "--gpu-nodes",
        default="4x8",
        metavar="NxG",
        help="simulated GPU nodes x GPUs each (default 4x8)",
    )
    up.add_argument(
        "--runner-nodes",
        default="1x4",
        metavar="NxG",
        help="runner nodes x GPUs each (default 1x4; 0 for none)",
    )
    up.add_argument(
        "--no-volcano",
        action="store_true",
        help="leave Volcano out (its CRDs, webhooks, queues and three components)",
    )
    up.add_argument(
        "--no-kueue",
        action="store_true",
        help="leave Kueue and JobSet out (their CRDs, webhooks, queues and managers)",
    )
    up.add_argument(
        "--no-hived",
        action="store_true",
        help="leave HiveD out (hivedscheduler and its kube-scheduler, priority classes)",
    )
    for name in ("down", "status"):
        sub = commands.add_parser(name)
        sub.add_argument("--dir", type=Path, default=None)
    args = parser.parse_args(argv)

    if args.command == "build":
        start = time.monotonic()
        try:
            print(build.ensure_built())
            print(build.ensure_volcano())
            print(prebuilt.ensure(prebuilt.KUEUE))
            print(prebuilt.ensure(prebuilt.JOBSET))
            print(prebuilt.ensure(prebuilt.HIVED))
            print(helm.ensure_helm())
        except build.BuildError as error:
            print(f"error: {error}", file=sys.stderr)
            return 1
        print(f"ready in {time.monotonic() - start:.1f}s", file=sys.stderr)
        return 0
    plane = controlplane.ControlPlane(args.dir)
    if args.command == "up":
        runner = _shape(args.runner_nodes, manifests.DEFAULT_RUNNER_POOL)
        gpus = None if args.runner_only else _shape(args.gpu_nodes, manifests.DEFAULT_GPU_POOL)
        options = controlplane.Options(
            gpu_pool=gpus if gpus and gpus.count else None,
            runner_pool=runner if runner.count else None,
            volcano=not args.no_volcano,
            kueue=not args.no_kueue,
            hived=not args.no_hived,
        )
        state = plane.up(options)
        print(
            f"cluster up in {state.started_seconds}s; users: "
            + ", ".join(f"{u}={p}" for u, p in state.users.items()),
            file=sys.stderr,
        )
        print(f"KUBECONFIG={state.kubeconfig}")
        return 0
    if args.command == "down":
        plane.down()
        return 0
    status = plane.status()
    saved = controlplane.State.load(plane.directory)
    print(
        json.dumps(
            {
                "dir": str(plane.directory),
                "running": bool(status) and all(status.values()),
                "processes": status,
                "kubeconfig": saved.kubeconfig if saved else None,
            },
            indent=2,
        )
    )
    return 0 if status and all(status.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
