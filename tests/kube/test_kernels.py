"""Remote kernels on the test cluster, once per flavor: the kernel is a one-pod job on the
runner node (the launcher and ipykernel really run), reached through the API server's
port-forward. jupyter_kernel_test's conformance suite; restart in the same pod; interrupt;
shutdown stopping the job and freeing its GPUs; the queue (a full VC, the reason, the start
once GPUs free); impossible requests; the idle self-end of a kernel whose server died."""

from __future__ import annotations

import asyncio
import io
import json
import os
import queue
import signal
import sys
import threading
import time
import unittest
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import jupyter_kernel_test
import pytest
import zmq
import zmq.utils.monitor
from jupyter_client.blocking import BlockingKernelClient
from jupyter_client.manager import AsyncKernelManager
from traitlets.config import Config

from jupyter_pai.backends.kubernetes import KubernetesBackend
from jupyter_pai.backends.models import JobState
from jupyter_pai.errors import NotFound
from jupyter_pai.kernels.backends import backend_for, close_backends
from jupyter_pai.kernels.provisioner import KernelStartError
from jupyter_pai.spec import parse_job
from tests.cluster.pytest_plugin import TestCluster, environment
from tests.kernels import (
    ENVIRONMENT,
    IDENTITY,
    eventually,
    run,
    secrets_in_environment,
    write_kernelspec,
)
from tests.kube.test_backend_jobs import (
    GPU_POOL,
    NS,
    RUNNER,
    SLEEPER,
    _cleanup,
    flavor_settings,
    make_backend,
    wait_for,
)

pytestmark = pytest.mark.kube


def backend_config(cluster: TestCluster, flavor: str) -> dict[str, Any]:
    """The provisioner's backend: alice's, pods on the runner node (they really run)."""
    return {
        "PAIConfig": {"backend": "kubernetes"},
        "KubernetesBackend": {
            "kubeconfig": str(cluster.user_kubeconfigs["alice"]),
            "flavor": flavor,
            "user": "alice",
            "node_selector": RUNNER,
            **flavor_settings(cluster, flavor),
        },
    }


@pytest.fixture
async def kernels(
    kube_cluster: TestCluster, flavor: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[KubernetesBackend]:
    """Kernelspecs in a folder of the test's own, and a backend to watch their jobs."""
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path))
    monkeypatch.setenv("JUPYTER_CONFIG_DIR", str(tmp_path / "config"))
    write_kernelspec(tmp_path, "pai-1", gpus=1)
    write_kernelspec(tmp_path, "pai-research", virtual_cluster="research", gpus=1)
    write_kernelspec(tmp_path, "pai-too-many", virtual_cluster="research", gpus=9)
    write_kernelspec(tmp_path, "pai-novc", virtual_cluster="nope", gpus=1)
    write_kernelspec(tmp_path, "pai-idle", gpus=1, idle_seconds=4)
    write_kernelspec(tmp_path, "pai-pod-ip", gpus=1, connect="pod-ip")
    config = tmp_path / "config"
    config.mkdir()
    (config / "jupyter_pai_config.json").write_text(
        json.dumps(backend_config(kube_cluster, flavor))
    )
    _cleanup(kube_cluster, NS)
    b = make_backend(kube_cluster, flavor)
    await b.start()
    yield b
    await close_backends()
    await b.close()
    _cleanup(kube_cluster, NS)


def kernel(name: str, cluster: TestCluster, flavor: str) -> AsyncKernelManager:
    return AsyncKernelManager(kernel_name=name, config=Config(backend_config(cluster, flavor)))


async def the_pod(b: KubernetesBackend, job_id: str) -> str:
    return b.running_pod(await b.get_job(job_id))


async def used_gpus(b: KubernetesBackend, vc: str = "default") -> int:
    return next(v.used.gpu for v in await b.virtual_clusters() if v.name == vc)


async def used_gpus_become(
    b: KubernetesBackend, expected: int, vc: str = "default", timeout: float = 15
) -> int:
    """The VC's GPUs in use once they are ``expected``, or as they are at ``timeout``:
    Kueue writes a ClusterQueue's usage a moment after it admits (0 once, in a run)."""
    deadline = time.monotonic() + timeout
    while True:
        used = await used_gpus(b, vc)
        if used == expected or time.monotonic() > deadline:
            return used
        await asyncio.sleep(0.3)


# -- conformance -----------------------------------------------------------------------


class Conformance(jupyter_kernel_test.KernelTests):
    """The suite as for the local backend (tests/server/test_kernel_conformance.py), run by
    :func:`test_conformance`, not collected on its own (it needs the cluster)."""

    __test__ = False
    kernel_name = "pai-1"
    language_name = "python"
    file_extension = ".py"
    code_hello_world = "print('hello, world')"
    code_stderr = "import sys; print('test', file=sys.stderr)"
    completion_samples = [{"text": "zi", "matches": {"zip"}}]
    complete_code_samples = ["1", "print('hello, world')", "def f(x):\n  return x*2\n\n\n"]
    incomplete_code_samples = ["print('''hello", "def f(x):\n  x*2"]
    invalid_code_samples = ["import = 7q"]
    code_page_something = "zip?"
    code_generate_error = "raise"
    code_execute_result = [{"code": "1+2+3", "result": "6"}]
    code_display_data = [
        {"code": "from IPython.display import HTML, display; display(HTML('<b>t</b>'))", "mime": "text/html"},
    ]  # fmt: skip
    code_history_pattern = "1?2*"
    supported_history_operations = ("tail", "search")  # not "range": see the local suite
    code_inspect_sample = "zip"
    code_clear_output = "from IPython.display import clear_output; clear_output()"


def test_conformance(kube_cluster: TestCluster, flavor: str, tmp_path: Path) -> None:
    """The suite run by unittest inside this test, so it gets the cluster and the flavor."""
    env = {
        "JUPYTER_PATH": str(tmp_path),
        "JUPYTER_CONFIG_DIR": str(tmp_path / "config"),
        "IPYTHONDIR": str(tmp_path / "ipython"),
    }
    write_kernelspec(tmp_path, "pai-1", gpus=1)
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "jupyter_pai_config.json").write_text(
        json.dumps(backend_config(kube_cluster, flavor))
    )
    _cleanup(kube_cluster, NS)
    try:
        with environment(env):
            suite = unittest.defaultTestLoader.loadTestsFromTestCase(Conformance)
            stream = io.StringIO()
            result = unittest.TextTestRunner(stream=stream, verbosity=2).run(suite)
    finally:
        _cleanup(kube_cluster, NS)
    print(stream.getvalue())
    assert result.wasSuccessful(), stream.getvalue()
    assert result.testsRun == suite.countTestCases() == 12
    # Only the subtest of the history operation the suite is told ipykernel lacks.
    assert [str(t) for t, _ in result.skipped] == [
        "test_history (tests.kube.test_kernels.Conformance.test_history) (hist_access_type='range')"
    ]


# -- life cycle --------------------------------------------------------------------------


async def test_restart_keeps_the_pod_and_its_gpus(
    kernels: KubernetesBackend, kube_cluster: TestCluster, flavor: str
) -> None:
    km = kernel("pai-1", kube_cluster, flavor)
    await km.start_kernel()
    try:
        job_id = km.provisioner.job_id  # type: ignore[union-attr]
        before, _ = await run(km, "x = 1; " + IDENTITY)
        pod = await the_pod(kernels, job_id)
        assert await used_gpus_become(kernels, 1) == 1
        await km.restart_kernel()
        after, _ = await run(km, IDENTITY)
        assert before.split()[0] != after.split()[0], "a new kernel process"
        _, name, gpus, has_x = after.split()
        assert (name, has_x) == (job_id, "False")
        # HiveD binds the kernel a GPU, which the runner exposes; elsewhere no device plugin.
        assert gpus.isdigit() if flavor == "hived" else gpus == "-", after
        assert await the_pod(kernels, job_id) == pod, "the same pod: no new trip through the queue"
        assert await used_gpus_become(kernels, 1) == 1
    finally:
        await km.shutdown_kernel()


async def test_interrupt(
    kernels: KubernetesBackend, kube_cluster: TestCluster, flavor: str
) -> None:
    km = kernel("pai-1", kube_cluster, flavor)
    await km.start_kernel()
    try:
        cell = asyncio.create_task(run(km, "import time; time.sleep(120)", timeout=60))
        await asyncio.sleep(2)
        await km.interrupt_kernel()
        _, reply = await asyncio.wait_for(cell, 20)
        assert reply["status"] == "error" and reply["ename"] == "KeyboardInterrupt", reply
    finally:
        await km.shutdown_kernel()


async def test_shutdown_deletes_the_job_and_frees_its_gpus(
    kernels: KubernetesBackend, kube_cluster: TestCluster, flavor: str
) -> None:
    km = kernel("pai-1", kube_cluster, flavor)
    await km.start_kernel()
    job_id = km.provisioner.job_id  # type: ignore[union-attr]
    listed = {j.id: j for j in await kernels.list_jobs()}
    assert listed[job_id].kind == "kernel" and listed[job_id].state == JobState.RUNNING
    started = time.monotonic()
    await km.shutdown_kernel()

    async def freed() -> bool:
        try:
            await kernels.get_job(job_id)
        except NotFound:  # deleted: its pod, Secret (the key) and Service with it
            return await used_gpus(kernels) == 0
        return False

    await eventually(freed, "the kernel's job to be deleted and its GPU free", 10)
    assert time.monotonic() - started < 10
    name = job_id.split("~")[1]

    async def no_secret() -> bool:  # the garbage collector's work, soon after
        secrets = kube_cluster.core("alice").list_namespaced_secret(NS).items
        return not [s for s in secrets if name in s.metadata.name]

    await eventually(no_secret, "the kernel's Secret (its key) to be deleted", 30)


async def test_a_kernel_waits_in_a_full_vc_and_starts_when_a_job_ends(
    kernels: KubernetesBackend, kube_cluster: TestCluster, flavor: str
) -> None:
    # HiveD's research VC has no cells on the runner node, where kernels run: on hived the
    # kernel waits in default, whose GPUs on the runner node a job holds.
    hived = flavor == "hived"
    vc, where, n = ("default", RUNNER, 2) if hived else ("research", GPU_POOL, 4)
    pool = make_backend(kube_cluster, flavor, node_selector=where)
    await pool.start()
    km = kernel("pai-1" if hived else "pai-research", kube_cluster, flavor)
    starting: asyncio.Task[None] | None = None
    try:
        full = await pool.submit(parse_job(SLEEPER.format(name="full", vc=vc, n=n, gpu=2)).job)
        await wait_for(pool, full.id, lambda d: d.state == JobState.RUNNING)
        # A server's provisioners share one started backend (watch cache synced): the
        # clock starts there, not with this test's first connection to the cluster.
        await backend_for(km)
        asked = time.monotonic()
        starting = asyncio.create_task(km.start_kernel())

        async def status() -> str | None:
            return getattr(km.provisioner, "status", None)

        first = await eventually(status, "the kernel's queue status", 2)
        assert time.monotonic() - asked <= 2
        assert first.startswith(f"waiting for 1 GPU in VC {vc}: "), first
        in_use = "4 of 28 in use" if hived else "8 of 8 in use, 0 jobs ahead"

        async def full_vc() -> bool:
            # Kueue publishes a ClusterQueue's reserved GPUs a moment after it admits a
            # Workload; the status follows as it changes.
            text = await status() or ""
            return text.startswith(f"waiting for 1 GPU in VC {vc}: {in_use}")

        await eventually(full_vc, "the status to count the full VC", 10)
        waiting = [j for j in await kernels.list_jobs() if j.kind == "kernel"]
        assert [j.state for j in waiting] == [JobState.WAITING]
        await asyncio.sleep(2)
        assert not starting.done()
        await pool.stop_job(full.id)
        await asyncio.wait_for(starting, 60)
        out, _ = await run(km, IDENTITY)
        assert out.split()[1] == waiting[0].id
    finally:
        if starting is not None and not starting.done():
            starting.cancel()
        await km.shutdown_kernel()
        await pool.close()


async def test_at_the_pod_ip_the_channels_are_curve_encrypted(
    kernels: KubernetesBackend, kube_cluster: TestCluster, flavor: str
) -> None:
    """connect=pod-ip (a server inside the cluster): no port-forward, CurveZMQ on every
    channel; a client without the key pair gets no answer."""
    km = kernel("pai-pod-ip", kube_cluster, flavor)
    await km.start_kernel()
    try:
        info = km.get_connection_info()
        job = await kernels.get_job(km.provisioner.job_id)  # type: ignore[union-attr]
        assert info["ip"] == job.tasks[0].ip != "127.0.0.1"
        assert info["shell_port"] == job.tasks[0].ports["kernel"][0]
        assert info.get("curve_publickey") and info.get("curve_secretkey")
        out, _ = await run(km, "print('over curve')")
        assert out.strip() == "over curve"

        plain = {k: v for k, v in info.items() if not k.startswith("curve_")}
        assert await asyncio.to_thread(_answer_without_keys, plain) is None
        # Every port, the launcher's control port included, is a CURVE server.
        ports = job.tasks[0].ports["kernel"]
        for port in ports:
            assert not await asyncio.to_thread(_handshakes, f"tcp://{info['ip']}:{port}"), port
    finally:
        await km.shutdown_kernel()


@pytest.mark.parametrize("flavor", ["volcano"])  # the pod's network, not the scheduler
async def test_through_port_forward_the_kernel_is_not_on_the_pod_network(
    kernels: KubernetesBackend, kube_cluster: TestCluster, flavor: str
) -> None:
    """Without CurveZMQ the kernel listens on the pod's own loopback only, where the
    port-forward connects: another pod subscribing to its IOPub at the pod IP reads
    nothing of what runs. On this machine the forward is a Unix socket in a folder only
    this user may enter, not a loopback port any local user could connect to."""
    km = kernel("pai-1", kube_cluster, flavor)
    await km.start_kernel()
    try:
        info = km.get_connection_info()
        job = await kernels.get_job(km.provisioner.job_id)  # type: ignore[union-attr]
        pod_ip, ports = job.tasks[0].ip, job.tasks[0].ports["kernel"]
        assert info["transport"] == "ipc"
        iopub = Path(f"{info['ip']}-{info['iopub_port']}")
        assert await asyncio.to_thread(iopub.is_socket)
        assert (await asyncio.to_thread(iopub.parent.stat)).st_mode & 0o777 == 0o700

        done = threading.Event()
        listening = asyncio.ensure_future(
            asyncio.to_thread(_subscribe, f"tcp://{pod_ip}:{ports[1]}", done)
        )
        await asyncio.sleep(1)  # a subscription needs a moment to reach a publisher
        out, _ = await run(km, "print('a secret cell')")
        assert out.strip() == "a secret cell"
        done.set()
        heard = await listening
        assert heard == [], heard
    finally:
        await km.shutdown_kernel()


def _subscribe(address: str, done: threading.Event) -> list[bytes]:
    """What an IOPub subscriber at ``address`` receives until ``done`` (and 2 s more)."""
    context = zmq.Context()
    sub = context.socket(zmq.SUB)
    sub.linger = 0
    sub.setsockopt(zmq.SUBSCRIBE, b"")
    sub.connect(address)
    heard: list[bytes] = []
    try:
        while not done.is_set() or sub.poll(2000):
            if sub.poll(100):
                heard.append(b"".join(sub.recv_multipart()))
        return heard
    finally:
        sub.close()
        context.term()


@pytest.mark.parametrize("flavor", ["volcano"])  # the pod's environment, not the scheduler
async def test_no_key_is_in_the_environment_of_a_pod_kernel(
    kernels: KubernetesBackend, kube_cluster: TestCluster, flavor: str
) -> None:
    """The kernel's key and Curve key pair come from the job's Secret as variables of the
    pod: neither ``os.environ`` nor the environment blocks of the kernel and its launcher
    show any of them to code in the kernel."""
    km = kernel("pai-pod-ip", kube_cluster, flavor)
    await km.start_kernel()
    try:
        out, reply = await run(km, ENVIRONMENT)
        assert reply["status"] == "ok", reply
        info = km.get_connection_info()
        key = info["key"].decode() if isinstance(info["key"], bytes) else str(info["key"])
        values = [key, str(info["curve_publickey"]), str(info["curve_secretkey"])]
        assert secrets_in_environment(out, values) == []
        assert '"PAI_JOB_NAME"' in out
    finally:
        await km.shutdown_kernel()


def _handshakes(address: str) -> bool:
    """Whether a client without keys (ZeroMQ's NULL mechanism) completes a handshake with
    the socket at ``address`` within 3 s: a CURVE server refuses it."""
    context = zmq.Context()
    client = context.socket(zmq.DEALER)
    client.linger = 0
    monitor = client.get_monitor_socket(
        zmq.EVENT_HANDSHAKE_SUCCEEDED
        | zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL
        | zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL
        | zmq.EVENT_HANDSHAKE_FAILED_AUTH
    )
    client.connect(address)
    try:
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline:
            if monitor.poll(200):
                event = zmq.utils.monitor.recv_monitor_message(monitor)
                return bool(event["event"] == zmq.EVENT_HANDSHAKE_SUCCEEDED)
        return False
    finally:
        client.disable_monitor()
        monitor.close(linger=0)
        client.close(linger=0)
        context.term()


def _answer_without_keys(plain: dict[str, Any]) -> dict[str, Any] | None:
    """A kernel_info request from a client that lacks the key pair: the kernel's reply, or
    None when there is none in 3 s. Once the CURVE handshake has failed, zmq drops the
    peer and a send would block for ever; a send timeout also counts as no answer."""
    eavesdropper = BlockingKernelClient()
    eavesdropper.load_connection_info(plain)
    eavesdropper.start_channels()
    try:
        eavesdropper.shell_channel.socket.setsockopt(zmq.SNDTIMEO, 3000)
        try:
            eavesdropper.kernel_info()
        except zmq.Again:
            return None
        try:
            return dict(eavesdropper.get_shell_msg(timeout=3))
        except queue.Empty:
            return None
    finally:
        eavesdropper.shell_channel.socket.setsockopt(zmq.LINGER, 0)
        eavesdropper.stop_channels()


@pytest.mark.parametrize(
    ("name", "reason"),
    [("pai-too-many", "research"), ("pai-novc", "no virtual cluster|nope")],
)
async def test_impossible_request_fails_at_once(
    kernels: KubernetesBackend, kube_cluster: TestCluster, flavor: str, name: str, reason: str
) -> None:
    started = time.monotonic()
    with pytest.raises(KernelStartError, match=reason):
        await kernel(name, cluster=kube_cluster, flavor=flavor).start_kernel()
    assert time.monotonic() - started < 3
    assert [j for j in await kernels.list_jobs() if j.kind == "kernel"] == []


SERVER = """
import json, sys, time
from jupyter_client.manager import KernelManager
from traitlets.config import Config
km = KernelManager(kernel_name="pai-idle", config=Config(json.loads(sys.argv[1])))
km.start_kernel()
print(km.provisioner.job_id, flush=True)
time.sleep(600)
"""


async def test_a_kernel_whose_server_died_ends_itself(
    kernels: KubernetesBackend, kube_cluster: TestCluster, flavor: str
) -> None:
    """idle_seconds=4: alive while its server sends heartbeats, ended once it is killed."""
    server = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        SERVER,
        json.dumps(backend_config(kube_cluster, flavor)),
        stdout=asyncio.subprocess.PIPE,
        env=dict(os.environ),
    )
    try:
        assert server.stdout is not None
        job_id = (await asyncio.wait_for(server.stdout.readline(), 90)).decode().strip()
        await asyncio.sleep(8)  # twice idle_seconds, with the server alive
        assert (await kernels.get_job(job_id)).state == JobState.RUNNING
        server.send_signal(signal.SIGKILL)

        async def freed() -> bool:
            return (await kernels.get_job(job_id)).state.terminal and await used_gpus(kernels) == 0

        await eventually(freed, "the orphaned kernel's job to end and free its GPU", 30)
    finally:
        if server.returncode is None:
            server.kill()
        await server.wait()
