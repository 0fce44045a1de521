"""Upload throughput into a claim: jupyter-pai's Kubernetes backend (``write_storage`` in
pieces, through the storage helper pod) vs the same bytes through the API server's
port-forward stream to a plain pod that writes them to the same claim (the baseline: no
HTTP, no pieces, no temporary name), side by side with the ratio; and the local
backend's ``write_storage`` into a folder of this machine.

    python benchmarks/storage_upload.py [--size-mb 1024] [--piece-mb 64] [--cluster-dir DIR]

Starts its own test cluster (tests/cluster, with its runner node: the pods really run)
unless ``--cluster-dir`` names a running one. Both Kubernetes sides start their pod before
the clock starts, open one port-forward per request (the backend: one per piece) and end
with the file fsync'ed on the claim's folder. Goal: ratio <= 1.2, local >= 100 MB/s."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
from kubernetes import client as sync_client
from kubernetes import config as sync_config
from kubernetes.client.exceptions import ApiException
from kubernetes_asyncio.stream import WsApiClient

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.cluster

from benchmarks.kube_cluster import cluster
from jupyter_pai.backends.base import UploadPiece
from jupyter_pai.backends.kubernetes import KubernetesBackend, connect
from jupyter_pai.backends.kubernetes.helper_http import FRAME
from jupyter_pai.backends.kubernetes.portforward import open_stream
from jupyter_pai.backends.local import LocalBackend
from tests.cluster import manifests

NS = "alice"
MiB = 1024 * 1024
RUNNER = {manifests.RUNNER_LABEL: "true"}
PORT = 8471
#: The baseline pod: reads SIZE bytes from one connection into FILE, fsyncs, says "ok".
SINK = """
import os, socket, sys
path, size, port = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((os.environ.get("JUPYTER_PAI_POD_LOOPBACK") or "127.0.0.1", port))
s.listen(1)
print("listening", flush=True)
conn, _ = s.accept()
left = size
with open(path, "wb") as f:
    while left:
        data = conn.recv(min(1 << 20, left))
        if not data:
            sys.exit("short")
        f.write(data)
        left -= len(data)
    f.flush()
    os.fsync(f.fileno())
conn.sendall(b"ok")
"""


async def blocks(block: bytes, size: int) -> AsyncIterator[bytes]:
    left = size
    while left > 0:
        yield block[: min(len(block), left)]
        left -= min(len(block), left)


def make_claim(admin: Any, folder: Path) -> tuple[str, str]:
    """A hostPath PV of ``folder`` (on this machine, where the runner's pods run) pre-bound
    to a new claim in alice's namespace."""
    core = sync_client.CoreV1Api(admin)
    suffix = uuid.uuid4().hex[:6]
    pv, claim = f"bench-pv-{suffix}", f"bench-{suffix}"
    core.create_persistent_volume(
        {
            "metadata": {"name": pv},
            "spec": {
                "capacity": {"storage": "100Gi"},
                "accessModes": ["ReadWriteOnce"],
                "storageClassName": "",
                "persistentVolumeReclaimPolicy": "Retain",
                "hostPath": {"path": str(folder), "type": "Directory"},
                "claimRef": {"namespace": NS, "name": claim},
            },
        }
    )
    core.create_namespaced_persistent_volume_claim(
        NS,
        {
            "metadata": {"name": claim},
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "storageClassName": "",
                "volumeName": pv,
                "resources": {"requests": {"storage": "100Gi"}},
            },
        },
    )
    deadline = time.monotonic() + 30
    while core.read_namespaced_persistent_volume_claim(claim, NS).status.phase != "Bound":
        if time.monotonic() > deadline:
            raise SystemExit(f"claim {claim} is never bound")
        time.sleep(0.2)
    return pv, claim


async def through_backend(
    kubeconfig: str, claim: str, folder: Path, block: bytes, size: int, piece: int
) -> float:
    b = KubernetesBackend(
        kubeconfig=kubeconfig, flavor="native", user="alice", node_selector=RUNNER
    )
    await b.start()
    try:
        deadline = time.monotonic() + 30
        while not any(s.name == claim for s in await b.storages()):
            if time.monotonic() > deadline:
                raise SystemExit(f"claim {claim} never appears as a storage")
            await asyncio.sleep(0.2)
        await b.make_folder(claim, "warm")  # the helper pod starts before the clock
        t0 = time.perf_counter()
        for offset in range(0, size, piece):
            n = min(piece, size - offset)
            state = await b.write_storage(
                claim, "via-pai.bin", UploadPiece(offset, n, size, blocks(block, n))
            )
        elapsed = time.perf_counter() - t0
        assert state.complete and (folder / "via-pai.bin").stat().st_size == size
        return elapsed
    finally:
        await b.close()


def pod_log(core: Any, name: str) -> str:
    try:
        return str(core.read_namespaced_pod_log(name, NS) or "")
    except ApiException:  # not started yet
        return ""


async def through_port_forward(
    kubeconfig: str, admin: Any, claim: str, folder: Path, block: bytes, size: int
) -> float:
    core = sync_client.CoreV1Api(admin)
    name = f"bench-sink-{uuid.uuid4().hex[:6]}"
    core.create_namespaced_pod(
        NS,
        {
            "metadata": {"name": name},
            "spec": {
                "restartPolicy": "Never",
                "terminationGracePeriodSeconds": 0,
                "nodeSelector": RUNNER,
                "containers": [
                    {
                        "name": "main",
                        "image": "python:3.11-slim",
                        "command": [
                            "python3",
                            "-c",
                            SINK,
                            "/data/via-forward.bin",
                            str(size),
                            str(PORT),
                        ],
                        "ports": [{"containerPort": PORT, "name": "sink"}],
                        "volumeMounts": [{"name": "d", "mountPath": "/data"}],
                    }
                ],
                "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": claim}}],
            },
        },
    )
    try:
        deadline = time.monotonic() + 60
        while "listening" not in pod_log(core, name):
            if time.monotonic() > deadline:
                raise SystemExit(f"the baseline pod {name} never listens")
            await asyncio.sleep(0.2)
        api = await connect.api_client(kubeconfig, None)
        ws_client = WsApiClient(configuration=api.configuration)
        try:
            t0 = time.perf_counter()
            async with await open_stream(ws_client, NS, name, PORT) as ws:
                frame = bytearray(b"\x00")
                async for data in blocks(block, size):
                    frame += data
                    if len(frame) > FRAME:
                        await ws.send_bytes(frame)
                        frame = bytearray(b"\x00")
                if len(frame) > 1:
                    await ws.send_bytes(frame)
                seen: set[int] = set()
                async for msg in ws:
                    if msg.type != aiohttp.WSMsgType.BINARY or not msg.data:
                        continue
                    channel, payload = msg.data[0], msg.data[1:]
                    if channel not in seen:
                        seen.add(channel)
                        payload = payload[2:]
                    if channel == 1 and payload:
                        raise SystemExit(f"port-forward error: {payload.decode()}")
                    if channel == 0 and b"ok" in payload:
                        break
            elapsed = time.perf_counter() - t0
        finally:
            await ws_client.close()
            await api.close()
        assert (folder / "via-forward.bin").stat().st_size == size
        return elapsed
    finally:
        core.delete_namespaced_pod(name, NS, grace_period_seconds=0)


async def through_local(block: bytes, size: int, piece: int) -> float:
    with tempfile.TemporaryDirectory(prefix="pai-bench-local-") as tmp:
        root = Path(tmp) / "work"
        root.mkdir()
        b = LocalBackend(
            state_dir=str(Path(tmp) / "state"),
            gpu_slots=0,
            housekeeping=0,
            storages_config={"work": {"path": str(root)}},
        )
        t0 = time.perf_counter()
        for offset in range(0, size, piece):
            n = min(piece, size - offset)
            state = await b.write_storage(
                "work", "local.bin", UploadPiece(offset, n, size, blocks(block, n))
            )
        elapsed = time.perf_counter() - t0
        assert state.complete and (root / "local.bin").stat().st_size == size
        return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size-mb", type=int, default=1024)
    parser.add_argument("--piece-mb", type=int, default=64, help="pieces of the jupyter-pai upload")
    parser.add_argument("--cluster-dir", help="use this running cluster (tests.cluster up --dir)")
    args = parser.parse_args()
    size, piece = args.size_mb * MiB, args.piece_mb * MiB
    block = os.urandom(MiB)
    with cluster(args.cluster_dir, runner=True, schedulers=False, gpu_nodes=False) as state:
        sync_config.load_kube_config(config_file=state.kubeconfig)
        admin = sync_client.ApiClient()
        alice = state.users["alice"]
        with tempfile.TemporaryDirectory(prefix="pai-bench-claim-", dir="/var/tmp") as tmp:
            folder = Path(tmp)
            os.chmod(folder, 0o777)
            pv, claim = make_claim(admin, folder)
            try:
                base = asyncio.run(through_port_forward(alice, admin, claim, folder, block, size))
                (folder / "via-forward.bin").unlink()
                pai = asyncio.run(through_backend(alice, claim, folder, block, size, piece))
            finally:
                core = sync_client.CoreV1Api(admin)
                core.delete_namespaced_persistent_volume_claim(claim, NS)
                core.delete_persistent_volume(pv)
    local = asyncio.run(through_local(block, size, piece))
    mb = size / 1e6
    print(f"{args.size_mb} MiB into a claim, pieces of {args.piece_mb} MiB for jupyter-pai")
    print(f"{'path':<34}{'seconds':>10}{'MB/s':>10}")
    print(f"{'port-forward to a plain pod':<34}{base:>10.2f}{mb / base:>10.1f}")
    print(f"{'jupyter-pai (helper pod)':<34}{pai:>10.2f}{mb / pai:>10.1f}")
    print(f"{'jupyter-pai local backend':<34}{local:>10.2f}{mb / local:>10.1f}")
    print(f"ratio jupyter-pai / port-forward: {pai / base:.2f}x (goal <= 1.2)")


if __name__ == "__main__":
    main()
