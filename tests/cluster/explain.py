"""What a test that timed out waiting on pods says about them: each pod as the API server
has it (phase, deletion, finalizers, containers), the Jobs that own them, and what the pod
runner and kube-controller-manager logged about them, so a slow step names itself."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kubernetes import client

#: Log lines kept per pod (the runner's) and per namespace (the controller manager's).
LOG_LINES = 12


def _container_states(pod: Any) -> str:
    states = []
    for status in pod.status.container_statuses or []:
        state = status.state.to_dict() if status.state else {}
        now = [k for k, v in state.items() if v]
        states.append(f"{status.name}={'/'.join(now) or '?'}")
    return ",".join(states) or "-"


def _grep(log: Path, needles: list[str], keep: int) -> list[str]:
    try:
        lines = log.read_text(errors="replace").splitlines()
    except OSError as error:
        return [f"({log.name}: {error})"]
    return [line for line in lines if any(n in line for n in needles)][-keep:]


def pods_report(cluster_dir: Path, api: Any, namespace: str, selector: str | None = None) -> str:
    """The namespace's pods (those ``selector`` picks) and the Jobs owning them, as text."""
    core, batch = client.CoreV1Api(api), client.BatchV1Api(api)
    out = [f"pods in {namespace} ({selector or 'all'}), as the API server has them:"]
    try:
        pods = core.list_namespaced_pod(namespace, label_selector=selector).items
        jobs = batch.list_namespaced_job(namespace, label_selector=selector).items
    except Exception as error:  # the report must not hide the failure it explains
        return f"{out[0]} unreadable: {error}"
    for pod in pods:
        meta = pod.metadata
        out.append(
            f"  {meta.name} on {pod.spec.node_name}: {pod.status.phase}, containers"
            f" {_container_states(pod)}, deleted {meta.deletion_timestamp}"
            f" (grace {meta.deletion_grace_period_seconds}), finalizers {meta.finalizers}"
        )
    for job in jobs:
        status = job.status
        conditions = [f"{c.type}={c.status}" for c in status.conditions or []]
        out.append(
            f"  job {job.metadata.name}: suspend={job.spec.suspend} active={status.active}"
            f" terminating={status.terminating} failed={status.failed}"
            f" succeeded={status.succeeded} conditions={conditions}"
        )
    logs = cluster_dir / "logs"
    for pod in pods:
        lines = _grep(logs / "pod-runner.log", [pod.metadata.name], LOG_LINES)
        out += [f"  runner: {line}" for line in lines]
    names = [j.metadata.name for j in jobs]
    if names:
        lines = _grep(logs / "kube-controller-manager.log", names, LOG_LINES)
        out += [f"  controller-manager: {line}" for line in lines]
    return "\n".join(out)
