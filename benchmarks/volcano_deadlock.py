"""The gang deadlock of the seeds (Kubeflow + Volcano): 4 GPUs, two jobs of 4 workers x
1 GPU submitted together, (a) through jupyter-pai with the volcano flavor (one
``batch.volcano.sh`` Job each, minAvailable 4) and (b) the same pods without a gang
(default scheduler, no PodGroup), side by side.

    python benchmarks/volcano_deadlock.py [--window 30] [--cluster-dir DIR]

Starts its own test cluster (tests/cluster) unless ``--cluster-dir`` names a running one,
and adds one simulated node of 4 GPUs (kwok) that only these jobs select. A worker makes
progress only when all 4 workers of its job run (data-parallel training): once a job's 4
pods are Running they get kwok's run-for annotation and end 2 s later. (a) submits with
``KubernetesBackend.submit`` in this process (no Jupyter server); (b) creates the pods the
volcano flavor builds for (a), less ``schedulerName``, interleaved a0 b0 a1 b1 ...

Printed per side: partially-bound GPU-seconds (the integral over time of the GPUs held by
a job that holds some but not all of its GPUs, from a LIST of the pods' bindings every
0.2 s: bound to a node and not finished), the most GPUs each job held, and the time from
submission until both jobs finished (all 4 pods Succeeded), or "deadlocked". Every
snapshot counts, so on a loaded machine the gang side may show a fraction of a
GPU-second from a snapshot taken between vc-scheduler's binds of one gang, or while a
finished gang's pods end one by one: brief, unlike the no-gang side's whole window."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kubernetes_asyncio import client, config
from kubernetes_asyncio.client.exceptions import ApiException

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.cluster

from benchmarks.kube_cluster import cluster
from jupyter_pai.backends.kubernetes import KubernetesBackend
from jupyter_pai.backends.kubernetes.flavors.volcano import VolcanoFlavor
from jupyter_pai.backends.kubernetes.naming import LABEL_JOB, LABEL_MANAGED_BY, make_names
from jupyter_pai.backends.kubernetes.pods import PodOptions
from jupyter_pai.backends.models import JobState
from jupyter_pai.spec import parse_job
from tests.cluster import kube, kwokconfig, manifests

NS = "alice"
POOL = "bench-four-gpus"
WORKERS = 4
GPU = manifests.GPU_RESOURCE
SAMPLE = 0.2
SPEC = """
protocolVersion: 2
name: {name}
type: job
taskRoles:
  worker:
    instances: 4
    resourcePerInstance: {{cpu: 1, memoryMB: 256, gpu: 1}}
    commands: ['sleep 300']
"""


@dataclass
class Side:
    label: str
    jobs: dict[str, str]  # job name -> base (the pods' LABEL_JOB)
    partial_gpu_s: float = 0.0
    partial_s: float = 0.0  # time during which some job held part of its GPUs
    max_held: dict[str, int] = field(default_factory=dict)
    finished_at: dict[str, float] = field(default_factory=dict)
    samples: int = 0
    states: dict[str, str] = field(default_factory=dict)  # jupyter-pai's view at the end

    def both_finished(self) -> float | None:
        done = self.finished_at.values()
        return max(done) if len(self.finished_at) == len(self.jobs) else None


def gpus(pod: Any) -> int:
    total = 0
    for c in pod.spec.containers:
        requests = (c.resources and c.resources.requests) or {}
        total += int(requests.get(GPU, 0))
    return total


async def observe(
    core: client.CoreV1Api,
    side: Side,
    window: float,
    t0: float,
    done: Any = None,
) -> None:
    """Sample the pods' bindings until both jobs finish or ``window`` s pass; release a
    job (run-for 2 s) once all its workers run."""
    released: set[str] = set()
    selector = f"{LABEL_JOB} in ({','.join(side.jobs.values())})"
    last = time.monotonic()
    while time.monotonic() - t0 < window and side.both_finished() is None:
        # One LIST for both jobs: a consistent snapshot of the bindings.
        pods = (await core.list_namespaced_pod(NS, label_selector=selector)).items
        now = time.monotonic()
        dt, last = now - last, now
        side.samples += 1
        partial_now = False
        for name, base in side.jobs.items():
            mine = [p for p in pods if p.metadata.labels.get(LABEL_JOB) == base]
            held = [
                p
                for p in mine
                if p.spec.node_name and p.status.phase not in ("Succeeded", "Failed")
            ]
            held_gpus = sum(gpus(p) for p in held)
            side.max_held[name] = max(side.max_held.get(name, 0), held_gpus)
            if 0 < held_gpus < WORKERS:
                side.partial_gpu_s += held_gpus * dt
                partial_now = True
            running = [p for p in held if p.status.phase == "Running"]
            if len(running) == WORKERS and name not in released:
                released.add(name)
                patch = {"metadata": {"annotations": {kwokconfig.RUN_FOR: "2s"}}}
                await asyncio.gather(
                    *(core.patch_namespaced_pod(p.metadata.name, NS, patch) for p in running)
                )
            succeeded = sum(1 for p in mine if p.status.phase == "Succeeded")
            finished = succeeded == WORKERS or (done is not None and await done(name))
            if finished and name not in side.finished_at:
                side.finished_at[name] = now - t0
        if partial_now:
            side.partial_s += dt
        await asyncio.sleep(SAMPLE)


async def wait_gone(core: client.CoreV1Api, bases: list[str], timeout: float = 60) -> None:
    selector = f"{LABEL_JOB} in ({','.join(bases)})"
    deadline = time.monotonic() + timeout
    while (await core.list_namespaced_pod(NS, label_selector=selector)).items:
        if time.monotonic() > deadline:
            raise SystemExit(f"pods of {bases} still there after {timeout}s")
        await asyncio.sleep(0.5)


def build(name: str) -> tuple[str, list[dict[str, Any]]]:
    """The volcano flavor's objects for job ``name``, as the backend would build them."""
    job = parse_job(SPEC.format(name=name)).job
    options = PodOptions(namespace=NS, node_selector={manifests.POOL_LABEL: POOL})
    names = make_names(job, "alice")
    return names.base, VolcanoFlavor(options).build(job, names).objects


async def gang(admin: client.ApiClient, user_kubeconfig: str, window: float) -> Side:
    """(a) Through jupyter-pai, volcano flavor."""
    core, custom = client.CoreV1Api(admin), client.CustomObjectsApi(admin)
    b = KubernetesBackend(
        kubeconfig=user_kubeconfig,
        flavor="volcano",
        user="alice",
        node_selector={manifests.POOL_LABEL: POOL},
    )
    await b.start()
    names = ("gang-a", "gang-b")
    side = Side("jupyter-pai, volcano flavor (gang)", {n: build(n)[0] for n in names})
    ids: dict[str, str] = {}

    async def done(name: str) -> bool:
        return (await b.get_job(ids[name])).state == JobState.SUCCEEDED

    try:
        t0 = time.monotonic()
        submitted = await asyncio.gather(
            *(b.submit(parse_job(SPEC.format(name=n)).job) for n in names)
        )
        ids.update({n: j.id for n, j in zip(names, submitted, strict=True)})
        await observe(core, side, window, t0, done)
        for n in names:
            side.states[n] = (await b.get_job(ids[n])).state.value
    finally:
        await b.close()
        for base in side.jobs.values():
            with contextlib.suppress(ApiException):
                await custom.delete_namespaced_custom_object(
                    "batch.volcano.sh",
                    "v1alpha1",
                    NS,
                    "jobs",
                    base,
                    propagation_policy="Background",
                )
        await wait_gone(core, list(side.jobs.values()))
    return side


def plain_pods(name: str) -> tuple[str, list[dict[str, Any]]]:
    """The pods Volcano makes from the flavor's vcjob, with the default scheduler and no
    PodGroup: same containers, resources, node selector, labels."""
    base, objects = build(name)
    vcjob = next(o for o in objects if o["kind"] == "Job")
    pods = []
    for task in vcjob["spec"]["tasks"]:
        for i in range(task["replicas"]):
            pod = json.loads(json.dumps(task["template"]))
            pod["spec"].pop("schedulerName", None)
            pod["spec"]["hostname"] = f"{base}-{task['name']}-{i}"
            pod["spec"]["terminationGracePeriodSeconds"] = 0
            pod["metadata"]["name"] = f"{base}-{task['name']}-{i}"
            pod["metadata"]["annotations"]["volcano.sh/task-index"] = str(i)
            pod["metadata"]["labels"].pop(LABEL_MANAGED_BY, None)  # no jupyter-pai job
            pods.append({"apiVersion": "v1", "kind": "Pod", **pod})
    return base, pods


async def no_gang(admin: client.ApiClient, window: float) -> Side:
    """(b) The same pods, default scheduler, no gang."""
    core = client.CoreV1Api(admin)
    built = {n: plain_pods(n) for n in ("plain-a", "plain-b")}
    side = Side("same pods, default scheduler, no gang", {n: b for n, (b, _) in built.items()})
    try:
        t0 = time.monotonic()
        for i in range(WORKERS):  # interleaved: a0 b0 a1 b1 ...
            for _, pods in built.values():
                body: Any = pods[i]  # the client takes a manifest as well as a V1Pod
                await core.create_namespaced_pod(NS, body)
        await observe(core, side, window, t0)
    finally:
        for base in side.jobs.values():
            await core.delete_collection_namespaced_pod(
                NS, label_selector=f"{LABEL_JOB}={base}", grace_period_seconds=0
            )
        await wait_gone(core, list(side.jobs.values()))
    return side


def report(side: Side, window: float) -> None:
    both = side.both_finished()
    print(f"\n{side.label}")
    for name in side.jobs:
        at = side.finished_at.get(name)
        end = f"finished at {at:.1f} s" if at is not None else "not finished"
        state = f", jupyter-pai: {side.states[name]}" if name in side.states else ""
        print(f"  {name}: held at most {side.max_held.get(name, 0)}/4 GPUs, {end}{state}")
    print(f"  partially-bound GPU-seconds: {side.partial_gpu_s:.1f} ({side.samples} samples)")
    if both is not None:
        print(f"  both finished: {both:.1f} s after submission")
    elif not side.finished_at:
        print(f"  deadlocked: neither finished in {window:.0f} s")
    else:
        print(f"  deadlocked: {len(side.finished_at)} of 2 finished in {window:.0f} s")


def summary(a: Side, b: Side, window: float) -> None:
    def finish(side: Side) -> str:
        both = side.both_finished()
        if both is not None:
            return f"{both:.1f} s"
        return f"deadlocked ({len(side.finished_at)}/2 in {window:.0f} s)"

    print(f"\n{'':44}{'gang (a)':>22}{'no gang (b)':>26}")
    print(f"{'partially-bound GPU-seconds':44}{a.partial_gpu_s:>22.1f}{b.partial_gpu_s:>26.1f}")
    print(f"{'time some job held part of its GPUs (s)':44}{a.partial_s:>22.1f}{b.partial_s:>26.1f}")
    print(f"{'both jobs finished':44}{finish(a):>22}{finish(b):>26}")


async def run(admin_kubeconfig: str, user_kubeconfig: str, window: float) -> None:
    admin = await config.new_client_from_config(config_file=admin_kubeconfig)
    try:
        a = await gang(admin, user_kubeconfig, window)
        report(a, window)
        b = await no_gang(admin, window)
        report(b, window)
    finally:
        await admin.close()
    summary(a, b, window)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--window", type=float, default=30, help="seconds each side may take")
    parser.add_argument("--cluster-dir", help="use this running cluster (tests.cluster up --dir)")
    args = parser.parse_args()
    with cluster(args.cluster_dir) as state:
        sync_api = kube.api_client(Path(state.kubeconfig))
        shape = manifests.NodeShape(pool=POOL, count=1, gpus=WORKERS)
        kube.apply(sync_api, [manifests.node(n, shape) for n in shape.names()])
        try:
            wait_ready(sync_api, shape.names())
            asyncio.run(run(state.kubeconfig, state.users["alice"], args.window))
        finally:
            kube.delete_nodes(sync_api, shape.names())


def wait_ready(api: Any, names: list[str], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        nodes = kube.core(api).list_node(label_selector=f"{manifests.POOL_LABEL}={POOL}").items
        ready = {
            n.metadata.name
            for n in nodes
            for c in n.status.conditions or []
            if c.type == "Ready" and c.status == "True"
        }
        if ready >= set(names):
            return
        time.sleep(0.25)
    raise SystemExit(f"nodes {names} not Ready after {timeout}s")


if __name__ == "__main__":
    main()
