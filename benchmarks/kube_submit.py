"""Submission latency: ``POST /pai/api/jobs`` on a real Jupyter server with the extension
(Kubernetes backend, native flavor) vs creating the same objects directly with
kubernetes_asyncio, side by side (median over N runs, and the ratio).

    python benchmarks/kube_submit.py [--runs 20] [--cluster-dir DIR]

Starts its own test cluster (tests/cluster) unless ``--cluster-dir`` names a running one,
and its own Jupyter server. Both sides create the same objects (the backend's builder
makes them) in the same order, one request each: the primary ConfigMap, then the others
owned by it. The REST side adds what a submission is for: parsing and validating the
YAML, the checks against the cluster (virtual cluster, name taken, storages), JSON."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp
from kubernetes_asyncio import client, config

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.cluster

from benchmarks.kube_cluster import cluster
from jupyter_pai.backends.kubernetes.flavors.native import NativeFlavor
from jupyter_pai.backends.kubernetes.naming import make_names
from jupyter_pai.backends.kubernetes.pods import PodOptions
from jupyter_pai.spec import parse_job
from tests.cluster import manifests, processes

NS = "alice"
GPU_POOL = {manifests.POOL_LABEL: "gpu"}
SPEC = """
protocolVersion: 2
name: {name}
type: job
taskRoles:
  ps:
    instances: 1
    completion: {{minSucceededInstances: -1}}
    resourcePerInstance: {{cpu: 1, memoryMB: 256, gpu: 0}}
    commands: ['sleep 300']
  worker:
    instances: 2
    resourcePerInstance: {{cpu: 1, memoryMB: 256, gpu: 1}}
    commands: ['sleep 300']
"""


def start_jupyter(
    kubeconfig: str, work: Path, flavor: str = "native"
) -> tuple[subprocess.Popen[bytes], str, str]:
    port, token = processes.free_port(), secrets.token_hex(16)
    conf = work / "config"
    conf.mkdir()
    (conf / "jupyter_server_config.json").write_text(
        json.dumps(
            {
                "ServerApp": {"jpserver_extensions": {"jupyter_pai": True}, "allow_root": True},
                "PAIConfig": {"backend": "kubernetes"},
                "KubernetesBackend": {
                    "kubeconfig": kubeconfig,
                    "flavor": flavor,
                    "user": "alice",
                    "node_selector": GPU_POOL,
                },
            }
        )
    )
    env = {**os.environ, "JUPYTER_CONFIG_DIR": str(conf)}
    argv = [sys.executable, "-m", "jupyter_server", f"--port={port}", "--ip=127.0.0.1"]
    argv += ["--no-browser", f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={work}"]
    log = work / "jupyter.log"
    proc = processes.start(argv, log, env=env, tie_to_parent=True)
    return proc, f"http://127.0.0.1:{port}", token


async def wait_ready(
    http: aiohttp.ClientSession, url: str, proc: subprocess.Popen[bytes], log_path: Path
) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            log = processes.log_tail(log_path)
            raise SystemExit(f"jupyter server exited with {proc.returncode}:\n{log}")
        try:
            async with http.get(f"{url}/pai/api/info") as resp:
                if resp.status == 200:
                    return
        except aiohttp.ClientError:
            pass
        await asyncio.sleep(0.3)
    raise SystemExit("jupyter server not ready after 60s")


async def via_rest(http: aiohttp.ClientSession, url: str, name: str) -> float:
    body = SPEC.format(name=name)
    t = time.perf_counter()
    async with http.post(
        f"{url}/pai/api/jobs", data=body, headers={"Content-Type": "text/yaml"}
    ) as resp:
        text = await resp.text()
    elapsed = time.perf_counter() - t
    if resp.status != 201:
        raise SystemExit(f"POST /pai/api/jobs: {resp.status} {text}")
    return elapsed


async def direct(api: client.ApiClient, name: str) -> float:
    """The objects the backend would create, with kubernetes_asyncio's typed APIs."""
    job = parse_job(SPEC.format(name=name)).job
    options = PodOptions(namespace=NS, default_image="python:3.11-slim", node_selector=GPU_POOL)
    built = NativeFlavor(options).build(job, make_names(job, "alice"))
    objects = [json.loads(json.dumps(o)) for o in built.objects]
    core, batch, custom = (
        client.CoreV1Api(api),
        client.BatchV1Api(api),
        client.CustomObjectsApi(api),
    )
    t = time.perf_counter()
    owner: dict[str, Any] | None = None
    for body in objects:
        body["metadata"]["namespace"] = NS
        if owner is not None:
            body["metadata"]["ownerReferences"] = [owner]
        kind = body["kind"]
        created: Any
        if kind == "ConfigMap":
            created = await core.create_namespaced_config_map(NS, body)
        elif kind == "Secret":
            created = await core.create_namespaced_secret(NS, body)
        elif kind == "Service":
            created = await core.create_namespaced_service(NS, body)
        elif kind == "Job":
            created = await batch.create_namespaced_job(NS, body)
        else:
            group, version = body["apiVersion"].split("/")
            created = await custom.create_namespaced_custom_object(
                group, version, NS, "podgroups", body
            )
        if owner is None:
            owner = {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "name": created.metadata.name,
                "uid": created.metadata.uid,
                "blockOwnerDeletion": False,
            }
    return time.perf_counter() - t


async def run(kubeconfig: str, runs: int) -> None:
    with tempfile.TemporaryDirectory(prefix="pai-bench-jupyter-") as tmp:
        proc, url, token = start_jupyter(kubeconfig, Path(tmp))
        headers = {"Authorization": f"token {token}"}
        api = await config.new_client_from_config(config_file=kubeconfig)
        try:
            async with aiohttp.ClientSession(headers=headers) as http:
                await wait_ready(http, url, proc, Path(tmp) / "jupyter.log")
                # Warm-up, not counted: the backend's start and watch cache, connections.
                await via_rest(http, url, "warm-rest")
                await direct(api, "warm-direct")
                rest_times, direct_times = [], []
                for i in range(runs):  # interleaved, so both see the same cluster load
                    rest_times.append(await via_rest(http, url, f"rest-{i}"))
                    direct_times.append(await direct(api, f"direct-{i}"))
        finally:
            await api.close()
            processes.stop(proc.pid, sys.executable)
    r, d = statistics.median(rest_times), statistics.median(direct_times)
    print(f"{runs} submissions each, a 2-role job (ConfigMap, Service, PodGroup, 2 Jobs)")
    print(f"{'':46}{'median':>10}{'min':>10}{'max':>10}")
    for label, times in (
        ("POST /pai/api/jobs (Jupyter server, REST)", rest_times),
        ("same objects directly (kubernetes_asyncio)", direct_times),
    ):
        print(
            f"{label:46}{statistics.median(times) * 1e3:8.1f}ms"
            f"{min(times) * 1e3:8.1f}ms{max(times) * 1e3:8.1f}ms"
        )
    print(f"ratio REST / direct: {r / d:.2f}x (overhead {(r - d) * 1e3:.1f} ms per submission)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--cluster-dir", help="use this running cluster (tests.cluster up --dir)")
    args = parser.parse_args()
    with cluster(args.cluster_dir) as state:
        asyncio.run(run(state.users["alice"], args.runs))


if __name__ == "__main__":
    main()
