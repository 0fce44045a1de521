"""The backend's watch cache keeps the events of jobs that exist, not of jobs deleted: a
namespace's events live an hour in Kubernetes, and a busy user's churn would otherwise
grow the server for that hour. Events do not depend on the scheduler: native only."""

from __future__ import annotations

import asyncio
import contextlib
import time

import pytest

from jupyter_pai.backends.kubernetes import KubernetesBackend
from jupyter_pai.backends.kubernetes.naming import LABEL_JOB
from jupyter_pai.backends.models import JobState
from jupyter_pai.errors import NotFound
from jupyter_pai.spec import parse_job
from tests.cluster.pytest_plugin import TestCluster
from tests.kube.test_backend_jobs import NS, _cleanup, make_backend, wait_for

pytestmark = pytest.mark.kube


def _about(cluster: TestCluster, names: set[str]) -> list[str]:
    """The events the API server still holds about these objects."""
    events = cluster.core().list_namespaced_event(NS).items
    return [
        f"{e.involved_object.name}: {e.reason}" for e in events if e.involved_object.name in names
    ]


def _cached(backend: KubernetesBackend, names: set[str]) -> list[str]:
    events = backend.views.cache["events"].values()
    return [
        f"{e['involvedObject']['name']}: {e.get('reason')}"
        for e in events
        if e["involvedObject"].get("name") in names
    ]


async def test_a_deleted_jobs_events_leave_the_cache_and_a_kept_jobs_stay(
    kube_cluster: TestCluster,
) -> None:
    _cleanup(kube_cluster, NS)
    b: KubernetesBackend = make_backend(kube_cluster, "native")
    await b.start()
    try:
        ids = [
            (await b.submit(parse_job({"name": name, "instances": 2, "command": "true"}).job)).id
            for name in ("evgone", "evkept")
        ]
        for job_id in ids:
            await wait_for(b, job_id, lambda d: d.state == JobState.SUCCEEDED, 60)
        objects: dict[str, set[str]] = {}
        bases: dict[str, str] = {}
        for job_id in ids:
            primary = b.views.primary(job_id)
            bases[job_id] = base = primary["metadata"]["labels"][LABEL_JOB]
            pods = {p["metadata"]["name"] for p in b.views.cache["pods"].by_index(base)}
            objects[job_id] = {primary["metadata"]["name"], base, *pods}
        gone, kept = ids
        deadline = time.monotonic() + 30
        while not (_cached(b, objects[gone]) and _cached(b, objects[kept])):
            assert time.monotonic() < deadline, "the jobs' events never reached the cache"
            await asyncio.sleep(0.2)

        await b.delete_job(gone)
        # Once its pods are gone too, nothing about the deleted job is cached, though the
        # API server keeps its events for their hour; the other job's events stay.
        deadline = time.monotonic() + 60
        while b.views.cache["pods"].by_index(bases[gone]) or _cached(b, objects[gone]):
            with contextlib.suppress(NotFound):
                await b.get_job(gone)
            assert time.monotonic() < deadline, f"still cached: {_cached(b, objects[gone])}"
            await asyncio.sleep(0.2)
        with pytest.raises(NotFound):
            await b.get_job(gone)
        assert _about(kube_cluster, objects[gone]), "the API server kept no event to compare"
        assert _cached(b, objects[kept])
        assert [e.reason for e in await b.events(kept)]
    finally:
        await b.close()
        _cleanup(kube_cluster, NS)
