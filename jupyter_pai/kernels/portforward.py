"""A kernel pod's ports on this machine, through the API server's port-forward
(:mod:`jupyter_pai.backends.kubernetes.portforward`): the kernel needs no CurveZMQ, its
traffic crosses the network inside the API server's TLS."""

from __future__ import annotations

from ..backends.kubernetes.backend import KubernetesBackend
from ..backends.kubernetes.naming import JobNames
from ..backends.kubernetes.portforward import PortForward
from ..backends.models import JobDetail
from ..errors import Unavailable

__all__ = ["PortForward", "running_pod"]


def running_pod(backend: KubernetesBackend, job: JobDetail) -> str:
    """The name of the kernel job's running pod (the one with the task's IP)."""
    primary = backend.views.primary(job.id)
    names = JobNames.from_annotations(primary["metadata"]["annotations"])
    ip = job.tasks[0].ip
    for _, _, pod in backend.views.pods(names):
        status = pod.get("status") or {}
        if status.get("phase") == "Running" and status.get("podIP") == ip:
            return str(pod["metadata"]["name"])
    raise Unavailable(f"job {job.id} has no running pod at {ip}")
