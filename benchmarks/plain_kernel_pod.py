"""The baseline of ``kernel_start.py --kube``: ipykernel in a plain Pod created directly
through the API (no job, no launcher), placed by kube-scheduler on the runner node and
reached through the API server's port-forward exactly as a ``pai`` kernel is; timed from
the create request to the first kernel_info reply."""

from __future__ import annotations

import asyncio
import json
import secrets
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import aiohttp
from jupyter_client.asynchronous.client import AsyncKernelClient

from jupyter_pai.backends.kubernetes.portforward import PortForward
from jupyter_pai.backends.kubernetes.resources import EVENT, POD
from jupyter_pai.backends.kubernetes.rest import ApiError, Rest, path

if TYPE_CHECKING:
    from jupyter_pai.backends.kubernetes.backend import KubernetesBackend

#: Fixed kernel ports: the runner gives every pod a loopback address of its own.
PORTS = (31700, 31701, 31702, 31703, 31704)
PORT_NAMES = ("shell_port", "iopub_port", "stdin_port", "control_port", "hb_port")
KEY_VARIABLE = "BENCH_KERNEL_KEY"
#: How long a deleted pod may take to go before the benchmark says so.
GONE_LIMIT = 60.0


def container_script() -> str:
    """Write the connection file, then exec ipykernel. The ip is the pod's own loopback
    (where port-forward connects); bash, not Python, so the baseline pays no extra start."""
    ports = ",".join(f'"{n}":{p}' for n, p in zip(PORT_NAMES, PORTS, strict=True))
    doc = '{"transport":"tcp","ip":"%s","key":"%s","signature_scheme":"hmac-sha256",' + ports + "}"
    return (
        'f="$HOME/kernel-connection.json"; umask 077; '
        f'printf \'{doc}\' "${{JUPYTER_PAI_POD_LOOPBACK:-127.0.0.1}}" "${KEY_VARIABLE}" '
        '> "$f" && exec python -m ipykernel_launcher -f "$f"'
    )


def pod_manifest(name: str, image: str, node_selector: dict[str, str], key: str) -> dict[str, Any]:
    """A pod like a ``pai`` kernel's (image, node, 1 GPU, no service link or token), for
    kube-scheduler."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": "kernel-start-baseline"}},
        "spec": {
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 5,
            "enableServiceLinks": False,
            "automountServiceAccountToken": False,
            "nodeSelector": dict(node_selector),
            "containers": [
                {
                    "name": "main",
                    "image": image,
                    "command": ["bash", "-c", container_script()],
                    "env": [{"name": KEY_VARIABLE, "value": key}],
                    "resources": {"limits": {"nvidia.com/gpu": "1"}},
                    "ports": [{"containerPort": p, "protocol": "TCP"} for p in PORTS],
                }
            ],
        },
    }


class PodEnded(RuntimeError):
    """The pod ended (or was deleted) before its kernel answered."""


async def until_running(rest: Rest, namespace: str, name: str, version: str) -> None:
    """Watch the pod (from its creation's resourceVersion: no event is missed) until it
    is Running."""
    while True:
        resp = await rest.open(
            "GET",
            path(POD, namespace),
            query={
                "watch": "1",
                "resourceVersion": version,
                "fieldSelector": f"metadata.name={name}",
                "allowWatchBookmarks": "true",
                "timeoutSeconds": 60,
            },
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=5, sock_read=90),
        )
        try:
            async for line in rest.lines(resp):
                event = json.loads(line)
                kind, obj = event.get("type"), event.get("object") or {}
                if kind == "ERROR":
                    raise PodEnded(f"watch of pod {name} failed: {obj.get('message')}")
                version = str(obj.get("metadata", {}).get("resourceVersion") or version)
                if kind == "DELETED":
                    raise PodEnded(f"pod {name} was deleted before it ran")
                phase = (obj.get("status") or {}).get("phase")
                if phase == "Running":
                    return
                if phase in ("Succeeded", "Failed"):
                    raise PodEnded(f"pod {name} ended ({phase}) before its kernel answered")
        finally:
            resp.release()  # also when Running ends the loop early


async def describe(rest: Rest, namespace: str, name: str) -> str:
    """The pod's phase, node, unmet conditions, container states and latest events."""
    try:
        pod = await rest.get(path(POD, namespace, name))
    except ApiError as error:
        return f"pod {name}: {error.status} {error}"
    status = pod.get("status") or {}
    words = [
        f"phase {status.get('phase', '?')}",
        f"node {pod['spec'].get('nodeName') or '(not bound)'}",
    ]
    for c in status.get("conditions") or []:
        if c.get("status") != "True":
            words.append(f"{c.get('type')} {c.get('reason', '')}: {c.get('message', '')}")
    for c in status.get("containerStatuses") or []:
        for state, detail in (c.get("state") or {}).items():
            if state != "running":
                words.append(f"container {state} {detail.get('reason', '')}")
    try:
        events = await rest.get(path(EVENT, namespace), fieldSelector=f"involvedObject.name={name}")
        for e in (events.get("items") or [])[-5:]:
            words.append(f"event {e.get('reason')}: {e.get('message')}")
    except ApiError as error:
        words.append(f"events unreadable: {error}")
    return f"pod {name}: " + "; ".join(words)


async def until_gone(rest: Rest, namespace: str, name: str) -> None:
    """Poll (50 ms) until the deleted pod has gone, so its GPU is free for the next run."""
    deadline = time.monotonic() + GONE_LIMIT
    while time.monotonic() < deadline:
        try:
            await rest.get(path(POD, namespace, name))
        except ApiError as error:
            if error.status == 404:
                return
            raise
        await asyncio.sleep(0.05)
    raise SystemExit(
        f"direct pod: still there {GONE_LIMIT:.0f} s after its deletion; "
        + await describe(rest, namespace, name)
    )


@dataclass
class Start:
    """One baseline start: what it waits for now (for the error on a timeout)."""

    backend: KubernetesBackend
    node_selector: dict[str, str]
    stage: str = "the create request"
    running_after: float = 0.0  # seconds from the create request to the pod Running

    async def run(self, name: str, key: str, limit: float) -> float:
        rest = self.backend.rest
        assert rest is not None
        namespace = self.backend.namespace
        body = pod_manifest(name, self.backend.default_image, self.node_selector, key)
        t0 = time.perf_counter()
        created = await rest.create(POD, namespace, body)
        forward: PortForward | None = None
        client: AsyncKernelClient | None = None
        try:
            self.stage = "pod Running"
            version = str(created["metadata"]["resourceVersion"])
            await until_running(rest, namespace, name, version)
            self.running_after = time.perf_counter() - t0
            self.stage = "the port-forward"
            forward = PortForward(self.backend, name, list(PORTS))
            await forward.start()
            self.stage = "the first kernel_info reply through the port-forward"
            client = AsyncKernelClient()
            info: dict[str, Any] = dict(zip(PORT_NAMES, PORTS, strict=True))
            info.update(transport="ipc", ip=forward.prefix, key=key, signature_scheme="hmac-sha256")
            client.load_connection_info(info)  # type: ignore[arg-type]
            # No heartbeat channel: without a manager, is_alive would then wait for beats.
            client.start_channels(hb=False)
            await client.wait_for_ready(timeout=max(1.0, limit - (time.perf_counter() - t0)))
            return time.perf_counter() - t0
        finally:
            if client is not None:
                client.stop_channels()
            if forward is not None:
                await forward.close()


async def start_to_info(
    backend: KubernetesBackend, node_selector: dict[str, str], limit: float
) -> tuple[float, float]:
    """Seconds from the pod's create request to its kernel's first kernel_info reply, and
    to the pod Running; the pod is deleted and gone before this returns."""
    rest = backend.rest
    assert rest is not None
    name = f"bench-ipykernel-{secrets.token_hex(4)}"
    start = Start(backend, node_selector)
    try:
        took = await asyncio.wait_for(start.run(name, secrets.token_hex(16), limit), limit)
        return took, start.running_after
    except (asyncio.TimeoutError, RuntimeError) as error:  # PodEnded, wait_for_ready's
        why = "timed out" if isinstance(error, asyncio.TimeoutError) else str(error)
        raise SystemExit(
            f"direct pod: no kernel_info reply within {limit:.0f} s ({why}); waited for "
            f"{start.stage}; " + await describe(rest, backend.namespace, name)
        ) from None
    finally:
        await rest.delete(POD, backend.namespace, name)
        await until_gone(rest, backend.namespace, name)
