"""Pods on the runner node really run: environment, logs, exit codes, reachability."""

from __future__ import annotations

import contextlib
import os
import random
import signal
import socket
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException
from kubernetes.stream import portforward

from tests.cluster import controlplane, kube, manifests
from tests.cluster.pytest_plugin import TestCluster

from .workloads import wait_for

pytestmark = pytest.mark.kube
NS = "alice"


def runner_pod(name: str, command: list[str], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": name}, "annotations": {"note": "hi"}},
        "spec": {
            "restartPolicy": "Never",
            "nodeSelector": {manifests.RUNNER_LABEL: "true"},
            "containers": [
                {
                    "name": "main",
                    "image": "python:3",
                    "command": command,
                    **spec.pop("container", {}),
                }
            ],
            **spec,
        },
    }


@pytest.fixture
def core(kube_cluster: TestCluster) -> Iterator[Any]:
    """As the restricted user alice in her namespace; her pods go at the end."""
    api = kube.core(kube_cluster.api("alice"))
    yield api
    api.delete_collection_namespaced_pod(NS, grace_period_seconds=0)


def _phase(core: Any, name: str) -> str:
    return str(core.read_namespaced_pod(name, NS).status.phase)


def test_pod_command_runs_with_its_environment(core: Any) -> None:
    core.create_namespaced_config_map(
        NS, {"metadata": {"name": "settings"}, "data": {"color": "blue", "SIZE": "3"}}
    )
    core.create_namespaced_secret(
        NS, {"metadata": {"name": "creds"}, "stringData": {"token": "s3cret"}}
    )
    try:
        script = (
            "import os; e = os.environ; "
            "print('hello from', e['POD_NAME'], e['POD_NAMESPACE'], e['POD_IP']); "
            "print('plain', e['GREETING'], e['COLOR'], e['TOKEN'], e['CFG_SIZE'], e['APP']); "
            "print('node', e['NODE'], 'cwd', os.getcwd())"
        )
        env = [
            {"name": "GREETING", "value": "hi-$(POD_NAME_PLAIN)"},
            {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
            {
                "name": "POD_NAMESPACE",
                "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}},
            },
            {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
            {"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
            {"name": "APP", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['app']"}}},
            {
                "name": "COLOR",
                "valueFrom": {"configMapKeyRef": {"name": "settings", "key": "color"}},
            },
            {"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "token"}}},
        ]
        env.insert(0, {"name": "POD_NAME_PLAIN", "value": "x"})
        core.create_namespaced_pod(
            NS,
            runner_pod(
                "env-check",
                ["python", "-c", script],
                container={
                    "env": env,
                    "envFrom": [{"prefix": "CFG_", "configMapRef": {"name": "settings"}}],
                },
            ),
        )
        wait_for(lambda: _phase(core, "env-check") == "Succeeded", 30, "pod succeeds")
        pod = core.read_namespaced_pod("env-check", NS)
        output = core.read_namespaced_pod_log("env-check", NS)
        assert f"hello from env-check alice {pod.status.pod_ip}" in output
        assert "plain hi-x blue s3cret 3 env-check" in output
        assert f"node {pod.spec.node_name} cwd" in output
        assert pod.status.pod_ip.startswith("127.")
        assert pod.status.container_statuses[0].state.terminated.exit_code == 0
    finally:
        core.delete_namespaced_config_map("settings", NS)
        core.delete_namespaced_secret("creds", NS)


def test_missing_config_map_waits_then_runs(core: Any) -> None:
    env = [{"name": "V", "valueFrom": {"configMapKeyRef": {"name": "later", "key": "v"}}}]
    core.create_namespaced_pod(
        NS,
        runner_pod(
            "late-cm", ["python", "-c", "import os; print(os.environ['V'])"], container={"env": env}
        ),
    )

    def waiting_reason() -> str | None:
        statuses = core.read_namespaced_pod("late-cm", NS).status.container_statuses or []
        waiting = statuses[0].state.waiting if statuses else None
        return waiting.reason if waiting else None

    wait_for(lambda: waiting_reason() == "CreateContainerConfigError", 30, "config error")
    assert _phase(core, "late-cm") == "Pending"
    core.create_namespaced_config_map(NS, {"metadata": {"name": "later"}, "data": {"v": "now"}})
    try:
        wait_for(lambda: _phase(core, "late-cm") == "Succeeded", 30, "runs once it exists")
        assert core.read_namespaced_pod_log("late-cm", NS) == "now\n"
    finally:
        core.delete_namespaced_config_map("later", NS)


def test_logs_follow_while_the_pod_runs(core: Any) -> None:
    script = "import time\nfor i in range(6):\n    print('tick', i, flush=True); time.sleep(0.5)"
    core.create_namespaced_pod(NS, runner_pod("ticker", ["python", "-u", "-c", script]))
    wait_for(lambda: _phase(core, "ticker") == "Running", 30, "pod runs")
    stream = core.read_namespaced_pod_log(
        "ticker", NS, follow=True, _preload_content=False, _request_timeout=30
    )
    lines, phases = [], []
    try:
        for raw in stream.stream():
            for line in raw.decode().splitlines():
                lines.append(line)
                phases.append(_phase(core, "ticker"))
            if len(lines) >= 6:
                break
    finally:
        stream.release_conn()
    assert lines == [f"tick {i}" for i in range(6)]
    assert phases[0] == "Running"  # the first line came while the process still ran
    wait_for(lambda: _phase(core, "ticker") == "Succeeded", 30, "pod succeeds")


def test_non_zero_exit_fails_the_pod(core: Any) -> None:
    core.create_namespaced_pod(
        NS, runner_pod("failing", ["python", "-c", "import sys; print('bye'); sys.exit(3)"])
    )
    wait_for(lambda: _phase(core, "failing") == "Failed", 30, "pod fails")
    pod = core.read_namespaced_pod("failing", NS)
    terminated = pod.status.container_statuses[0].state.terminated
    assert terminated.exit_code == 3
    assert terminated.reason == "Error"
    assert core.read_namespaced_pod_log("failing", NS).strip() == "bye"


def test_a_listening_pod_is_reachable(kube_cluster: TestCluster, core: Any) -> None:
    # Listening on every address of the pod: its pod-network IP and its own loopback.
    server = [
        "bash",
        "-c",
        'python -m http.server 8000 --bind "$POD_IP" & '
        'exec python -m http.server 8000 --bind "$JUPYTER_PAI_POD_LOOPBACK"',
    ]
    core.create_namespaced_pod(
        NS,
        runner_pod(
            "web",
            server,
            hostname="web-0",
            subdomain="peers",
            container={
                "ports": [{"containerPort": 8000}],
                "env": [
                    {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}
                ],
            },
        ),
    )
    wait_for(lambda: _phase(core, "web") == "Running", 30, "server pod runs")
    ip = core.read_namespaced_pod("web", NS).status.pod_ip

    def get(url: str) -> bytes:
        with urllib.request.urlopen(url, timeout=5) as response:
            return bytes(response.read())

    def serving() -> bool:
        try:
            return b"Directory listing" in get(f"http://{ip}:8000/")
        except OSError:
            return False

    wait_for(serving, 30, "HTTP at the pod IP")
    # The stable peer name of a pod behind a headless Service resolves to the pod IP.
    assert socket.gethostbyname("web-0.peers.alice.svc.cluster.local") == ip
    # Through the API server's port-forward, as alice.
    forward = portforward(core.connect_get_namespaced_pod_portforward, "web", NS, ports="8000")
    sock = forward.socket(8000)
    sock.settimeout(10)
    sock.sendall(b"GET / HTTP/1.0\r\nHost: web\r\n\r\n")
    reply = b""
    while b"\r\n\r\n" not in reply:  # the forwarded stream is not closed after the reply
        reply += sock.recv(65536)
    sock.close()
    forward.close()
    assert reply.startswith(b"HTTP/1.0 200")


def test_a_pods_loopback_is_its_own_and_where_port_forward_connects(core: Any) -> None:
    """Like a pod's network namespace: a server on the pod's loopback answers through the
    API server's port-forward, and nothing on the pod network reaches it."""
    server = ["bash", "-c", 'exec python -u -m http.server 8001 --bind "$JUPYTER_PAI_POD_LOOPBACK"']
    core.create_namespaced_pod(
        NS, runner_pod("private", server, container={"ports": [{"containerPort": 8001}]})
    )
    wait_for(lambda: _phase(core, "private") == "Running", 30, "server pod runs")
    wait_for(
        lambda: "Serving HTTP" in core.read_namespaced_pod_log("private", NS), 30, "it listens"
    )
    ip = core.read_namespaced_pod("private", NS).status.pod_ip
    with pytest.raises(OSError):
        socket.create_connection((ip, 8001), timeout=3).close()

    forward = portforward(core.connect_get_namespaced_pod_portforward, "private", NS, ports="8001")
    sock = forward.socket(8001)
    sock.settimeout(10)
    sock.sendall(b"GET / HTTP/1.0\r\nHost: private\r\n\r\n")
    reply = b""
    while b"\r\n\r\n" not in reply:
        reply += sock.recv(65536)
    sock.close()
    forward.close()
    assert reply.startswith(b"HTTP/1.0 200")


def test_deleting_a_pod_stops_its_process(core: Any) -> None:
    core.create_namespaced_pod(
        NS,
        runner_pod(
            "sleeper",
            ["python", "-c", "import os, time; print(os.getpid(), flush=True); time.sleep(600)"],
            terminationGracePeriodSeconds=5,
        ),
    )
    wait_for(lambda: _phase(core, "sleeper") == "Running", 30, "pod runs")
    wait_for(
        lambda: core.read_namespaced_pod_log("sleeper", NS).strip().isdigit(), 30, "process started"
    )

    pid = int(core.read_namespaced_pod_log("sleeper", NS).strip())
    core.delete_namespaced_pod("sleeper", NS)

    def gone() -> bool:
        try:
            core.read_namespaced_pod("sleeper", NS)
        except ApiException as error:
            return bool(error.status == 404)
        return False

    wait_for(gone, 15, "pod deleted")
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    break
        except FileNotFoundError:
            break
        time.sleep(0.1)
    else:
        raise AssertionError(f"process {pid} still runs")


def _processes_with(argv: list[str]) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if (entry / "cmdline").read_bytes().split(b"\0")[:-1] == [a.encode() for a in argv]:
                    found.append(int(entry.name))
    return found


def test_a_runner_shutting_down_ends_what_its_pods_left_in_sessions_of_their_own(
    tmp_path: Path,
) -> None:
    """sshd daemonizes into a session of its own: a cluster taken down while such a pod
    ran left it holding its port into the next test session."""
    daemon = ["sleep", f"{random.randint(10**6, 10**7)}"]  # this test's alone
    plane = controlplane.ControlPlane(tmp_path / "cluster")
    state = plane.up(
        controlplane.Options(
            gpu_pool=None, volcano=False, kueue=False, hived=False, tie_to_parent=True
        )
    )
    try:
        core = kube.core(kube.api_client(Path(state.kubeconfig)))
        # Deaf to SIGTERM, as a busy task may be: the runner's shutdown then kills it.
        script = (
            f"trap '' TERM; setsid {' '.join(daemon)} </dev/null >/dev/null 2>&1 & exec sleep 600"
        )
        core.create_namespaced_pod("default", runner_pod("leaver", ["sh", "-c", script]))
        wait_for(lambda: bool(_processes_with(daemon)), 30, "the pod's daemon started")
        plane.down()
        assert _processes_with(daemon) == []
    finally:
        plane.down()
        for pid in _processes_with(daemon):
            os.kill(pid, signal.SIGKILL)
