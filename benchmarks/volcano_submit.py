"""Submission → all pods Running on Volcano: ``POST /pai/api/jobs`` on a real Jupyter server
with the extension (Kubernetes backend, volcano flavor) vs creating the same objects
directly with kubernetes_asyncio, side by side (median over N runs, and the ratio).

    python benchmarks/volcano_submit.py [--runs 10] [--cluster-dir DIR]

Starts its own test cluster (tests/cluster, Volcano v1.15.1 beside kube-scheduler, pods
simulated by kwok on the GPU pool) unless ``--cluster-dir`` names a running one, and its
own Jupyter server. Both sides create the objects the volcano flavor builds (the headless
Service, then the ``batch.volcano.sh`` Job, then the Service's owner reference), the
direct side from the flavor's builder with no checks; after the warm-up the two Jobs
are read back and compared. The clock stops when a pod watch (one for the whole run,
started before) has seen every pod of the job Running: vc-controller-manager made the
PodGroup and the pods, vc-scheduler bound them (it schedules once a second), kwok started
them. Sides alternate which goes first; each job is deleted, and its pods gone, before
the next submission."""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
from kubernetes_asyncio import client, config, watch
from kubernetes_asyncio.client.exceptions import ApiException

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.cluster

from benchmarks.kube_cluster import cluster
from benchmarks.kube_submit import GPU_POOL, NS, SPEC, start_jupyter, via_rest, wait_ready
from jupyter_pai.backends.kubernetes.flavors.volcano import VolcanoFlavor
from jupyter_pai.backends.kubernetes.naming import LABEL_JOB, LABEL_MANAGED_BY, make_names
from jupyter_pai.backends.kubernetes.pods import PodOptions
from jupyter_pai.spec import parse_job
from tests.cluster import processes

PODS = 3  # SPEC: ps x1, worker x2
VCJOB = ("batch.volcano.sh", "v1alpha1", "jobs")
SELECTOR = f"{LABEL_MANAGED_BY}=jupyter-pai"


def base_of(name: str) -> str:
    return make_names(parse_job(SPEC.format(name=name)).job, "alice").base


class PodWatch:
    """Every jupyter-pai pod of the namespace, from one watch: when a job's pods are all
    Running (the event's arrival time), and when they are all gone."""

    def __init__(self, core: client.CoreV1Api) -> None:
        self.core = core
        self.phases: dict[str, tuple[str, str]] = {}  # pod -> (job base, phase)
        self.waiters: list[tuple[Callable[[], bool], asyncio.Future[float]]] = []
        self.synced = asyncio.Event()

    def _count(self, base: str, phase: str | None = None) -> int:
        return sum(1 for b, p in self.phases.values() if b == base and phase in (None, p))

    def running(self, base: str, n: int) -> asyncio.Future[float]:
        return self._wait(lambda: self._count(base, "Running") >= n)

    def gone(self, base: str) -> asyncio.Future[float]:
        return self._wait(lambda: self._count(base) == 0)

    def _wait(self, check: Callable[[], bool]) -> asyncio.Future[float]:
        future: asyncio.Future[float] = asyncio.get_running_loop().create_future()
        self.waiters.append((check, future))
        self._check(time.perf_counter())
        return future

    def _check(self, now: float) -> None:
        for check, future in list(self.waiters):
            if self.synced.is_set() and check():
                self.waiters.remove((check, future))
                if not future.done():
                    future.set_result(now)

    def _set(self, pod: Any, deleted: bool = False) -> None:
        name = pod.metadata.name
        if deleted:
            self.phases.pop(name, None)
        else:
            self.phases[name] = (pod.metadata.labels.get(LABEL_JOB, ""), pod.status.phase)

    async def run(self) -> None:
        while True:
            listed = await self.core.list_namespaced_pod(NS, label_selector=SELECTOR)
            self.phases = {}
            for pod in listed.items:
                self._set(pod)
            self.synced.set()
            self._check(time.perf_counter())
            try:
                stream = watch.Watch().stream(
                    self.core.list_namespaced_pod,
                    NS,
                    label_selector=SELECTOR,
                    resource_version=listed.metadata.resource_version,
                    timeout_seconds=300,
                )
                async for event in stream:
                    now = time.perf_counter()
                    if event["type"] == "ERROR":
                        break  # expired: list again
                    self._set(event["object"], deleted=event["type"] == "DELETED")
                    self._check(now)
            except ApiException as error:
                if error.status != 410:
                    raise


async def direct(api: client.ApiClient, name: str) -> float:
    """The objects the backend creates, from the flavor's builder, in the same order."""
    job = parse_job(SPEC.format(name=name)).job
    options = PodOptions(namespace=NS, default_image="python:3.11-slim", node_selector=GPU_POOL)
    built = VolcanoFlavor(options).build(job, make_names(job, "alice"))
    objects = [json.loads(json.dumps(o)) for o in built.objects]
    core, custom = client.CoreV1Api(api), client.CustomObjectsApi(api)
    t = time.perf_counter()
    earlier: list[tuple[str, str]] = []
    owner: dict[str, Any] | None = None
    for body in objects:
        body["metadata"]["namespace"] = NS
        if owner is not None:
            body["metadata"]["ownerReferences"] = [owner]
        kind = body["kind"]
        if kind == "Service":
            await core.create_namespaced_service(NS, body)
        elif kind == "Secret":
            await core.create_namespaced_secret(NS, body)
        else:
            created = await custom.create_namespaced_custom_object(*VCJOB[:2], NS, VCJOB[2], body)
            owner = {
                "apiVersion": created["apiVersion"],
                "kind": created["kind"],
                "name": created["metadata"]["name"],
                "uid": created["metadata"]["uid"],
                "blockOwnerDeletion": False,
            }
            continue
        earlier.append((kind, body["metadata"]["name"]))
    assert owner is not None
    patch = {"metadata": {"ownerReferences": [owner]}}
    for kind, obj in earlier:
        if kind == "Service":
            await core.patch_namespaced_service(obj, NS, patch)
        else:
            await core.patch_namespaced_secret(obj, NS, patch)
    return time.perf_counter() - t


async def one(
    pods: PodWatch, name: str, submit: Callable[[str], Awaitable[float]]
) -> tuple[float, float]:
    """(seconds until the create calls returned, seconds until all pods ran)."""
    base = base_of(name)
    running = pods.running(base, PODS)
    t = time.perf_counter()
    created = await submit(name)
    at = await asyncio.wait_for(running, 120)
    return created, at - t


async def delete(api: client.ApiClient, pods: PodWatch, name: str) -> None:
    base = base_of(name)
    gone = pods.gone(base)
    custom = client.CustomObjectsApi(api)
    await custom.delete_namespaced_custom_object(
        *VCJOB[:2], NS, VCJOB[2], base, propagation_policy="Background"
    )
    await asyncio.wait_for(gone, 120)


async def identical(api: client.ApiClient, rest_name: str, direct_name: str) -> list[str]:
    """The fields in which the two Volcano Jobs differ, other than their names."""
    custom = client.CustomObjectsApi(api)
    got = []
    for name in (rest_name, direct_name):
        obj = await custom.get_namespaced_custom_object(*VCJOB[:2], NS, VCJOB[2], base_of(name))
        text = json.dumps({"labels": obj["metadata"].get("labels"), "spec": obj["spec"]})
        text = text.replace(base_of(name), "BASE").replace(name, "NAME")
        annotations = {
            k: v.replace(base_of(name), "BASE").replace(name, "NAME")
            for k, v in (obj["metadata"].get("annotations") or {}).items()
        }
        got.append({**json.loads(text), "annotations": annotations})
    return [k for k in got[0] if got[0][k] != got[1][k]]


async def run(kubeconfig: str, runs: int) -> None:
    with tempfile.TemporaryDirectory(prefix="pai-bench-jupyter-") as tmp:
        proc, url, token = start_jupyter(kubeconfig, Path(tmp), flavor="volcano")
        api = await config.new_client_from_config(config_file=kubeconfig)
        pods = PodWatch(client.CoreV1Api(api))
        watcher = asyncio.get_running_loop().create_task(pods.run())
        try:
            async with aiohttp.ClientSession(headers={"Authorization": f"token {token}"}) as http:
                await wait_ready(http, url, proc, Path(tmp) / "jupyter.log")

                async def rest(name: str) -> float:
                    return await via_rest(http, url, name)

                async def plain(name: str) -> float:
                    return await direct(api, name)

                # Warm-up, not counted: the backend's start and watch cache, connections.
                await one(pods, "warm-rest", rest)
                await one(pods, "warm-direct", plain)
                differ = await identical(api, "warm-rest", "warm-direct")
                for name in ("warm-rest", "warm-direct"):
                    await delete(api, pods, name)
                times: dict[str, list[tuple[float, float]]] = {"rest": [], "direct": []}
                sides = {"rest": rest, "direct": plain}
                for i in range(runs):
                    order = ("rest", "direct") if i % 2 == 0 else ("direct", "rest")
                    for side in order:
                        name = f"{side}-{i}"
                        times[side].append(await one(pods, name, sides[side]))
                        await delete(api, pods, name)
        finally:
            watcher.cancel()
            await api.close()
            processes.stop(proc.pid, sys.executable)
    same = "identical" if not differ else f"DIFFER in {', '.join(differ)}"
    print(f"{runs} submissions each, a 2-role job (ps x1, worker x2 with 1 GPU: {PODS} pods)")
    print(f"the two Volcano Jobs, names aside: {same}")
    print(f"{'':46}{'create calls returned':>24}{'all pods Running':>30}")
    print(f"{'':46}{'median':>12}{'min':>12}{'median':>10}{'min':>10}{'max':>10}")
    for side, label in (
        ("rest", "POST /pai/api/jobs (Jupyter server, REST)"),
        ("direct", "same objects directly (kubernetes_asyncio)"),
    ):
        created = [c for c, _ in times[side]]
        ran = [r for _, r in times[side]]
        print(
            f"{label:46}{statistics.median(created) * 1e3:10.1f}ms{min(created) * 1e3:10.1f}ms"
            f"{statistics.median(ran):9.2f}s{min(ran):9.2f}s{max(ran):9.2f}s"
        )
    r = statistics.median(r for _, r in times["rest"])
    d = statistics.median(r for _, r in times["direct"])
    print(
        f"ratio REST / direct, submission → all pods Running: {r / d:.2f}x "
        f"(difference of medians {(r - d) * 1e3:+.0f} ms; goal ≤ 1.1x)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--cluster-dir", help="use this running cluster (tests.cluster up --dir)")
    args = parser.parse_args()
    with cluster(args.cluster_dir) as state:
        asyncio.run(run(state.users["alice"], args.runs))


if __name__ == "__main__":
    main()
