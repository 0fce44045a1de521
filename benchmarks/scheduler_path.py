"""What a flavour's scheduler itself costs a kernel's start, for ``kernel_start.py --kube``:
the objects the flavour builds for a one-pod, 1-GPU job (a batch Job, a vcjob, a JobSet
in Kueue's queue, a HiveD pod), created directly through the API in the order the backend
creates them, timed from the first create request until the pod is Running; against a
plain pod's create request to Running. Nothing of jupyter-pai's server path is in either:
the difference is the scheduler's and its controllers' (PodGroups, admission, sessions)."""

from __future__ import annotations

import asyncio
import secrets
import time
from typing import TYPE_CHECKING, Any

from jupyter_pai.backends.kubernetes.naming import LABEL_JOB, make_names
from jupyter_pai.backends.kubernetes.resources import POD, kind_of
from jupyter_pai.backends.kubernetes.rest import path
from jupyter_pai.spec import parse_job

if TYPE_CHECKING:
    from jupyter_pai.backends.kubernetes.backend import KubernetesBackend

#: How often the pods are looked at (the figure's resolution).
POLL = 0.02


async def _pods(backend: KubernetesBackend, base: str) -> list[dict[str, Any]]:
    rest = backend.rest
    assert rest is not None
    listed = await rest.get(path(POD, backend.namespace), labelSelector=f"{LABEL_JOB}={base}")
    return list(listed.get("items") or [])


async def objects_to_running(backend: KubernetesBackend, flavor: str, limit: float) -> float:
    """Seconds from creating the flavour's objects of a one-pod job to its pod Running;
    the job is deleted and its pod gone before this returns."""
    job = parse_job(
        {"name": f"sched-{secrets.token_hex(3)}", "gpus": 1, "command": "sleep 600"}
    ).job
    names = make_names(job, backend.user)
    built = backend.scheduler_flavor.build(job, names)
    rest = backend.rest
    assert rest is not None
    t0 = time.perf_counter()
    await backend.lifecycle.create(built.objects, built.primary, names)
    try:
        while True:
            pods = await _pods(backend, names.base)
            if any((p.get("status") or {}).get("phase") == "Running" for p in pods):
                return time.perf_counter() - t0
            if time.perf_counter() - t0 > limit:
                phases = [(p.get("status") or {}).get("phase") for p in pods]
                raise SystemExit(
                    f"flavor {flavor}: the pod of objects made directly "
                    f"was not Running within {limit:.0f} s (pods: {phases or 'none'})"
                )
            await asyncio.sleep(POLL)
    finally:
        primary = built.primary_object
        kind = kind_of(primary, backend.scheduler_flavor.own_kinds)
        await rest.delete(
            kind, backend.namespace, primary["metadata"]["name"], propagationPolicy="Background"
        )
        deadline = time.monotonic() + 60
        while await _pods(backend, names.base) and time.monotonic() < deadline:  # noqa: ASYNC110 - polls the API server
            await asyncio.sleep(0.05)
