"""What the job views keep per job: a job that may still change keeps its names and view
(its hooks read them on every pass); an ended job keeps its summary only, and its names and
view are derived again, the same, when its detail or logs are read."""

from __future__ import annotations

import json

from jupyter_pai.backends.kubernetes.flavors import NativeFlavor
from jupyter_pai.backends.kubernetes.flavors.base import config_map_primary
from jupyter_pai.backends.kubernetes.jobviews import JobViews
from jupyter_pai.backends.kubernetes.naming import ANN_OUTCOME, make_names
from jupyter_pai.backends.kubernetes.pods import PodOptions
from jupyter_pai.backends.kubernetes.states import job_view
from jupyter_pai.backends.models import JobState
from jupyter_pai.spec import parse_job

from .kube_fakes import ListAndWatch, Obj

SPEC = """
protocolVersion: 2
name: {name}
type: job
taskRoles:
  worker: {{instances: 2, commands: ["true"], resourcePerInstance: {{gpu: 1}}}}
"""


def primary(name: str, uid: str, *, ended: bool) -> Obj:
    job = parse_job(SPEC.format(name=name)).job
    body = config_map_primary(job, make_names(job, "alice"), "native")
    meta = body["metadata"]
    meta.update(namespace="alice", uid=uid, resourceVersion="7")
    meta["creationTimestamp"] = "2026-11-27T07:00:00Z"
    if ended:
        outcome = {"state": "SUCCEEDED", "reason": "every task succeeded", "exitCode": 0}
        meta["annotations"][ANN_OUTCOME] = json.dumps(outcome | {"time": "2026-11-27T07:01:00Z"})
    return body


async def test_an_ended_job_keeps_its_summary_and_derives_its_view_again() -> None:
    flavor = NativeFlavor(PodOptions(namespace="alice"))
    views = JobViews(flavor, "alice")
    api = ListAndWatch(
        {"configmaps": [primary("done", "u1", ended=True), primary("queued", "u2", ended=False)]}
    )
    views.watch(api, claims_selector=None)  # type: ignore[arg-type]
    views.cache.start()
    try:
        assert await views.cache.wait_synced(5)
        states = {j.name: j.state for j in views.summaries()}
        assert states == {"done": JobState.SUCCEEDED, "queued": JobState.WAITING}

        done = views.view(views.primary("alice~done"))
        assert done.kept is None  # nothing but the summary
        assert views.view(views.primary("alice~done")) is done  # and reused as it is
        job = parse_job(SPEC.format(name="done")).job
        names = make_names(job, "alice")
        assert done.names == names
        fresh = job_view(job, names, done.primary, [], flavor=flavor)
        assert done.view == fresh and done.view is not done.view  # derived at each read
        assert done.view.state == JobState.SUCCEEDED and len(done.view.tasks) == 2
        detail = views.detail("alice~done")
        assert detail.state == JobState.SUCCEEDED and [t.index for t in detail.tasks] == [0, 1]

        queued = views.view(views.primary("alice~queued"))
        assert queued.kept is not None and queued.view is queued.view
        assert queued.view.state == JobState.WAITING and queued.view.waiting_reason
    finally:
        await views.cache.stop()
