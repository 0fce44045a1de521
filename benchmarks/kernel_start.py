"""Time from a kernel start request to its first kernel_info reply: a ``pai`` kernelspec
(the kernel runs as a job of kind ``kernel`` with 1 GPU slot) against a plain ipykernel
kernelspec on the same machine (the baseline), alternating, with a free GPU; goal <= 1.2x.

    python benchmarks/kernel_start.py --runs 10
    python benchmarks/kernel_start.py --runs 10 --kube [--cluster-dir DIR]

``--kube`` also measures on the test cluster (tests/cluster, its own unless
``--cluster-dir`` names a running one), per flavor (native, volcano, kueue, hived): the
``pai`` kernel (a one-pod job on the runner node with a free GPU, reached through the API
server's port-forward) against the same pod made directly with ipykernel in it
(benchmarks/plain_kernel_pod.py: created through the API, placed by kube-scheduler,
reached through the same port-forward), alternating; goal <= 1.2x. It also prints what
the schedulers' own settings cost (Volcano's session period).
Each kernel is shut down (its job stopped or its pod gone, GPUs freed) before the next
starts; each start gives up after START_LIMIT seconds, saying what it waited for.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, cast

from jupyter_client.manager import AsyncKernelManager
from traitlets.config import Config

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from jupyter_pai.kernels.jobspec import KernelRequest  # noqa: E402
from jupyter_pai.kernels.kernelspec import kernelspec  # noqa: E402

if TYPE_CHECKING:
    from jupyter_pai.backends.kubernetes.backend import KubernetesBackend
    from tests.cluster import controlplane

#: The most one kernel start may take before the benchmark gives up, saying so.
START_LIMIT = 180.0


def write_specs(folder: Path, vc: str = "default") -> None:
    pai = kernelspec(KernelRequest(vc, gpus=1))
    plain = {
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "plain ipykernel",
        "language": "python",
    }
    for name, spec in (("pai-bench", pai), ("plain-bench", plain)):
        (folder / "kernels" / name).mkdir(parents=True, exist_ok=True)
        (folder / "kernels" / name / "kernel.json").write_text(json.dumps(spec))


async def start_to_info(name: str, config: Config | None = None) -> float:
    """Seconds from start_kernel to the first kernel_info_reply."""
    km = AsyncKernelManager(kernel_name=name, config=config or Config())
    t0 = time.perf_counter()
    await km.start_kernel()
    client = km.client()
    client.start_channels()
    try:
        await client.wait_for_ready(timeout=120)  # returns on the kernel_info_reply
        took = time.perf_counter() - t0
    finally:
        client.stop_channels()
        await km.shutdown_kernel()
    return took


def summary(values: list[float]) -> str:
    return (
        f"median {statistics.median(values):.2f} s  min {min(values):.2f} s  "
        f"max {max(values):.2f} s"
    )


async def local(runs: int) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {"pai-bench": [], "plain-bench": []}
    for i in range(runs + 1):  # the first round warms imports and the page cache
        order = ["pai-bench", "plain-bench"] if i % 2 else ["plain-bench", "pai-bench"]
        for name in order:
            took = await start_to_info(name)
            if i:
                times[name].append(took)
    return times


async def describe_namespace(kubeconfig: str, flavor: str) -> str:
    """The pods of the benchmark's namespace (phase, node) and its latest events: why a
    ``pai`` kernel that did not answer waited."""
    from benchmarks.plain_kernel_pod import describe
    from jupyter_pai.backends.kubernetes.resources import EVENT, POD
    from jupyter_pai.backends.kubernetes.rest import ApiError, path

    backend = await cluster_backend(kubeconfig, flavor)
    rest, namespace = backend.rest, backend.namespace
    assert rest is not None
    try:
        pods = (await rest.get(path(POD, namespace))).get("items") or []
        words = [await describe(rest, namespace, p["metadata"]["name"]) for p in pods]
        if not pods:
            events = (await rest.get(path(EVENT, namespace))).get("items") or []
            words = [f"event {e.get('reason')}: {e.get('message')}" for e in events[-5:]]
    except ApiError as error:
        return f"namespace {namespace} unreadable: {error}"
    return "; ".join(words) or f"no pod and no event in namespace {namespace}"


def cluster_config(kubeconfig: str, flavor: str) -> Config:
    from tests.cluster import manifests

    return Config(
        {
            "PAIConfig": {"backend": "kubernetes"},
            "KubernetesBackend": {
                "kubeconfig": kubeconfig,
                "flavor": flavor,
                "user": "alice",
                "node_selector": {manifests.RUNNER_LABEL: "true"},
            },
        }
    )


async def cluster_backend(kubeconfig: str, flavor: str) -> KubernetesBackend:
    """The backend the ``pai`` kernels of this flavor submit through (the same client)."""
    from types import SimpleNamespace

    from jupyter_pai.kernels.backends import backend_for

    backend, _ = await backend_for(SimpleNamespace(config=cluster_config(kubeconfig, flavor)))
    return cast("KubernetesBackend", backend)


async def on_cluster(kubeconfig: str, flavor: str, runs: int) -> dict[str, list[float]]:
    """``pai`` kernel and direct pod, alternating, and the flavour's own objects to their pod
    Running against the direct pod's Running (the scheduler's part); the first round warms
    up."""
    from benchmarks import plain_kernel_pod, scheduler_path
    from jupyter_pai.kernels.backends import close_backends
    from tests.cluster import manifests

    config = cluster_config(kubeconfig, flavor)
    times: dict[str, list[float]] = {"pai": [], "direct": [], "running": [], "objects": []}
    try:
        backend = await cluster_backend(kubeconfig, flavor)
        for i in range(runs + 1):
            for side in ("pai", "direct") if i % 2 else ("direct", "pai"):
                if side == "direct":
                    selector = {manifests.RUNNER_LABEL: "true"}
                    took, running = await plain_kernel_pod.start_to_info(
                        backend, selector, START_LIMIT
                    )
                    objects = await scheduler_path.objects_to_running(backend, flavor, START_LIMIT)
                    if i:
                        times["running"].append(running)
                        times["objects"].append(objects)
                else:
                    try:
                        took = await asyncio.wait_for(
                            start_to_info("pai-bench", config), START_LIMIT
                        )
                    except asyncio.TimeoutError:
                        raise SystemExit(
                            f"flavor {flavor}: the pai kernel did not answer kernel_info within "
                            f"{START_LIMIT:.0f} s; waited for its job's pod: "
                            + await describe_namespace(kubeconfig, flavor)
                        ) from None
                    # As the direct pod's: the next start begins once this one's pod and
                    # objects have gone.
                    await scheduler_path.settled(backend, flavor)
                if i:
                    times[side].append(took)
        return times
    finally:
        await close_backends()


def scheduler_costs(state: controlplane.State) -> str:
    """What the test cluster's schedulers are set to, where a setting adds to a start."""
    info = state.processes.get("vc-scheduler")
    if info is None:
        return "Volcano is not running on this cluster"
    try:
        argv = Path(f"/proc/{info['pid']}/cmdline").read_bytes().decode().split("\0")
    except OSError:
        return f"vc-scheduler (pid {info['pid']}) is not on this machine: its settings unread"
    period = next((a.split("=", 1)[1] for a in argv if a.startswith("--schedule-period=")), "")
    set_to = f"--schedule-period={period}" if period else "no --schedule-period: its default 1s"
    return (
        f"vc-scheduler opens a scheduling session once a period ({set_to}): a volcano "
        "kernel's pod may wait up to one period for it. An admin sets it with vc-scheduler's "
        "--schedule-period (Volcano's chart: custom.scheduler_schedule_period, default 1s). "
        "The others have no period to set: kube-scheduler (the direct pod; native and, once "
        "Kueue admits, kueue pods) and HiveD's kube-scheduler act on each event."
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--kube", action="store_true", help="also on the test cluster")
    parser.add_argument("--cluster-dir", help="a running cluster (tests.cluster up --dir)")
    parser.add_argument(
        "--flavors",
        default="native,volcano,kueue,hived",
        help="the flavours measured with --kube, comma-separated",
    )
    parser.add_argument(
        "--volcano-period",
        help="its own cluster's vc-scheduler --schedule-period (e.g. 200ms; default 1s): "
        "what an admin's setting saves a volcano kernel",
    )
    args = parser.parse_args()
    flavors = [f for f in args.flavors.split(",") if f]
    unknown = set(flavors) - {"native", "volcano", "kueue", "hived"}
    if unknown:
        parser.error(f"--flavors: no flavour {', '.join(sorted(unknown))}")
    if args.volcano_period and args.cluster_dir:
        parser.error("--volcano-period sets the benchmark's own cluster: leave out --cluster-dir")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        write_specs(folder)
        os.environ.update(
            JUPYTER_PATH=str(folder),
            IPYTHONDIR=str(folder / "ipython"),
            JUPYTER_PAI_STATE_DIR=str(folder / "state"),
            JUPYTER_PAI_LOCAL_GPUS="2",
            JUPYTER_PAI_BACKEND="local",
        )
        times = asyncio.run(local(args.runs))
        pai, plain = times["pai-bench"], times["plain-bench"]
        print(f"local backend, {args.runs} runs each, start request -> kernel_info reply")
        print(f"  pai kernelspec (1 GPU slot, job of kind kernel): {summary(pai)}")
        print(f"  plain ipykernel kernelspec:                      {summary(plain)}")
        ratio = statistics.median(pai) / statistics.median(plain)
        print(f"  ratio pai / plain (medians): {ratio:.2f}x (goal <= 1.2x)")
        if args.kube:
            from benchmarks.kube_cluster import cluster

            # The kernel's pod runs on the runner node (the only one whose pods run).
            with cluster(
                args.cluster_dir, runner=True, volcano_schedule_period=args.volcano_period
            ) as state:
                print(f"test cluster, what the schedulers cost: {scheduler_costs(state)}")
                kubeconfig = str(state.users["alice"])
                for flavor in flavors:
                    took = asyncio.run(on_cluster(kubeconfig, flavor, args.runs))
                    pai, direct = took["pai"], took["direct"]
                    ratio = statistics.median(pai) / statistics.median(direct)
                    print(
                        f"test cluster, flavor {flavor}, {args.runs} runs each, start -> kernel_info"
                    )
                    print(f"  pai kernel (job, launcher, port-forward): {summary(pai)}")
                    print(f"  direct pod (ipykernel, kube-scheduler):   {summary(direct)}")
                    print(f"  ratio pai / direct (medians): {ratio:.2f}x (goal <= 1.2x)")
                    # The scheduler's part: the flavour's own objects, made directly, to
                    # their pod Running, against the direct pod's create to Running.
                    objects, running = took["objects"], took["running"]
                    share = statistics.median(objects) - statistics.median(running)
                    rest = statistics.median(pai) - statistics.median(direct) - share
                    print(
                        f"  the flavour's objects made directly, to pod Running: {summary(objects)}"
                    )
                    print(
                        f"  the direct pod, to Running:                          {summary(running)}"
                    )
                    print(
                        f"  of the {statistics.median(pai) - statistics.median(direct):+.2f} s: "
                        f"the scheduler's path {share:+.2f} s, jupyter-pai's {rest:+.2f} s; "
                        f"ratio without the scheduler's path "
                        f"{(statistics.median(pai) - share) / statistics.median(direct):.2f}x",
                        flush=True,
                    )


if __name__ == "__main__":
    main()
