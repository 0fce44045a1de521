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

from jupyter_pai.backends.kubernetes.flavors.kueue import JOBSET, KUEUE_WORKLOAD
from jupyter_pai.backends.kubernetes.flavors.native import GANG_POD_GROUP
from jupyter_pai.backends.kubernetes.flavors.volcano import VOLCANO_JOB, VOLCANO_POD_GROUP
from jupyter_pai.backends.kubernetes.naming import LABEL_JOB, make_names
from jupyter_pai.backends.kubernetes.resources import BATCH_JOB, POD, kind_of
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
        await settled(backend, flavor)


#: What a deleted job leaves while its controllers clean up, per flavour (the pods too).
LEFT_KINDS = {
    "native": (BATCH_JOB, GANG_POD_GROUP),
    "volcano": (VOLCANO_JOB, VOLCANO_POD_GROUP),
    "kueue": (JOBSET, KUEUE_WORKLOAD),
    "hived": (),
}
#: How long a deleted job's objects may take to go before the benchmark says so.
SETTLE_LIMIT = 60.0


async def settled(backend: KubernetesBackend, flavor: str) -> None:
    """Poll (50 ms) until no pod of a jupyter-pai job and none of the flavour's objects
    that a job's deletion leaves for a while (a Workload Kueue still releases, a PodGroup
    Volcano still closes) are in the namespace: the next start, whichever side, then finds
    the schedulers as idle as the one before it did (a terminating pod's GPU counts as
    taken; a controller busy with a deletion answers its webhooks later)."""
    rest = backend.rest
    assert rest is not None
    deadline = time.monotonic() + SETTLE_LIMIT
    for kind in (POD, *LEFT_KINDS[flavor]):
        selector = LABEL_JOB if kind is POD else None
        while (await rest.get(path(kind, backend.namespace), labelSelector=selector)).get("items"):
            if time.monotonic() > deadline:
                raise SystemExit(
                    f"flavor {flavor}: {kind.plural} of an ended job still there "
                    f"{SETTLE_LIMIT:.0f} s after its deletion"
                )
            await asyncio.sleep(0.05)
