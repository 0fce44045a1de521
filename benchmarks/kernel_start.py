"""Time from a kernel start request to its first kernel_info reply: a ``pai`` kernelspec
(the kernel runs as a job of kind ``kernel`` with 1 GPU slot) against a plain ipykernel
kernelspec on the same machine (the baseline), alternating, with a free GPU.

    python benchmarks/kernel_start.py --runs 10
    python benchmarks/kernel_start.py --runs 10 --kube [--cluster-dir DIR]

``--kube`` also measures the ``pai`` kernel on the test cluster (tests/cluster, its own
unless ``--cluster-dir`` names a running one), per flavor (native, volcano, kueue, hived):
a one-pod job on the runner node with a free GPU, reached through the API server's
port-forward; goal <= 3 s.
Each kernel is shut down (its job stopped, GPUs freed) before the next starts.
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

from jupyter_client.manager import AsyncKernelManager
from traitlets.config import Config

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from jupyter_pai.kernels.jobspec import KernelRequest  # noqa: E402
from jupyter_pai.kernels.kernelspec import kernelspec  # noqa: E402

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


async def on_cluster(kubeconfig: str, flavor: str, runs: int) -> list[float]:
    from jupyter_pai.kernels.backends import close_backends
    from tests.cluster import manifests

    config = Config(
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
    try:
        took = []
        for _ in range(runs + 1):
            try:
                took.append(await asyncio.wait_for(start_to_info("pai-bench", config), START_LIMIT))
            except asyncio.TimeoutError:
                raise SystemExit(
                    f"flavor {flavor}: the pai kernel did not answer kernel_info within "
                    f"{START_LIMIT:.0f} s; see `jupyter pai jobs` on the cluster for why it waits"
                ) from None
        return took[1:]
    finally:
        await close_backends()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--kube", action="store_true", help="also on the test cluster")
    parser.add_argument("--cluster-dir", help="a running cluster (tests.cluster up --dir)")
    args = parser.parse_args()
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
        print(f"  ratio pai / plain (medians): {ratio:.2f}x (goal <= 1.5x)")
        if args.kube:
            from benchmarks.kube_cluster import cluster

            # The kernel's pod runs on the runner node (the only one whose pods run).
            with cluster(args.cluster_dir, runner=True) as state:
                for flavor in ("native", "volcano", "kueue", "hived"):
                    took = asyncio.run(on_cluster(str(state.users["alice"]), flavor, args.runs))
                    print(f"test cluster, flavor {flavor}, {args.runs} runs (goal <= 3 s)")
                    print(f"  pai kernelspec, pod through port-forward: {summary(took)}")


if __name__ == "__main__":
    main()
