"""Volcano: one ``batch.volcano.sh`` Job, one Volcano task per task role, the virtual
cluster as the Volcano queue, gang = ``minAvailable``.

Everything Volcano's admission webhook would default is set here, so clusters without the
webhook behave the same. OpenPAI semantics on Volcano's lifecycle policies:

* ``taskRetryCount`` n → the container restarted in place (``restartPolicy: OnFailure``),
  the task's ``maxRetry`` n + 1: Volcano raises ``TaskFailed`` when the restarts reach it
  (summed over the role's pods: a budget per role, where OpenPAI counts per instance);
* a role with ``minFailedInstances: 1`` fails the job on a pod failure: ``RestartJob`` while
  ``jobRetryCount`` (the job's ``maxRetry``) allows, ``TerminateJob`` otherwise;
* a role with ``minSucceededInstances`` = all its instances completes the job
  (``TaskCompleted → CompleteJob``); other thresholds are enforced by the backend;
* eviction restarts the whole job (``PodEvicted → RestartJob``), like OpenPAI.

Stop is a bus ``Command`` with ``AbortJob``: the job stays, in phase ``Aborted``. A waiting
gang says why through its PodGroup's ``Unschedulable`` condition.

A virtual cluster is a Volcano ``Queue`` (``volcano_queues``: guaranteed share, may
borrow, may lend). The scheduler does the preempting: a reclaimed pod gets the event
``Evict`` ("Pod is evicted, because of reclaim") and the job's ``PodEvicted → RestartJob``
policy recreates every pod, so the job waits again, saying why, and runs when capacity
frees.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from ....spec.protocol import JobProtocol
from ...models import JobSummary, Resources, VirtualCluster
from .. import vcs
from ..naming import JobNames, base_labels
from ..pods import Manifest, headless_service, pod_template, secret_manifest
from ..resources import VOLCANO_COMMAND, VOLCANO_JOB, VOLCANO_POD_GROUP, VOLCANO_QUEUE, Kind
from .base import Built, Flavor, ObjectsOf, StopStep, primary_metadata
from .volcano_queues import preemption_reason, queue_virtual_clusters

SCHEDULER = "volcano"
TASK_INDEX_ANNOTATION = "volcano.sh/task-index"


def task_policies(job: JobProtocol, role: str) -> list[dict[str, Any]]:
    """A role with ``taskRetryCount`` restarts its container in place (``OnFailure``, so the
    pod and the earlier attempt's log stay, as OpenPAI keeps them); Volcano raises
    ``TaskFailed`` once the role's restarts reach the task's ``maxRetry``. ``RestartPod``
    would delete the pod and make a new one of the same name: the attempt's log gone."""
    spec = job.task_roles[role]
    policies: list[dict[str, Any]] = []
    if spec.min_failed == 1:
        action = "RestartJob" if job.job_retry_count > 0 else "TerminateJob"
        event = "TaskFailed" if spec.task_retry_count > 0 else "PodFailed"
        policies.append({"event": event, "action": action})
    if spec.min_succeeded == spec.instances:
        policies.append({"event": "TaskCompleted", "action": "CompleteJob"})
    return policies


class VolcanoFlavor(Flavor):
    name = "volcano"
    primary_kind = VOLCANO_JOB
    # Volcano's controller makes the PodGroup (owned by the Job), not us.
    foreign_kinds: ClassVar[tuple[Kind, ...]] = (VOLCANO_POD_GROUP,)
    cluster_kinds: ClassVar[tuple[Kind, ...]] = (VOLCANO_QUEUE,)
    pod_group_kind = VOLCANO_POD_GROUP
    index_annotation = TASK_INDEX_ANNOTATION

    def build(self, job: JobProtocol, names: JobNames) -> Built:
        labels = base_labels(names, job.virtual_cluster)
        gang = job.gang_allocation
        tasks = []
        for role, spec in job.task_roles.items():
            template = pod_template(
                job,
                names,
                self.options,
                role,
                index_annotation=TASK_INDEX_ANNOTATION,
                peer_host=self.peer_host,
                scheduler_name=SCHEDULER,
                subdomain=names.service,
            )
            if spec.task_retry_count > 0:
                template["spec"]["restartPolicy"] = "OnFailure"
            tasks.append(
                {
                    "name": names.roles[role],
                    "replicas": spec.instances,
                    "minAvailable": spec.instances if gang else 1,
                    # TaskFailed fires when the role's restarts reach maxRetry.
                    "maxRetry": spec.task_retry_count + 1 if spec.task_retry_count else 0,
                    "policies": task_policies(job, role),
                    "template": template,
                }
            )
        vcjob: Manifest = {
            "apiVersion": VOLCANO_JOB.api_version,
            "kind": "Job",
            "metadata": primary_metadata(job, names, self.name),
            "spec": {
                "schedulerName": SCHEDULER,
                "queue": job.virtual_cluster,
                "minAvailable": job.total_instances if gang else 1,
                "maxRetry": job.job_retry_count,
                "policies": [{"event": "PodEvicted", "action": "RestartJob"}],
                # svc: pod host names <job>-<task>-<index> in subdomain <job> (our Service);
                # env: VK_TASK_INDEX for scripts written for Volcano.
                "plugins": {"svc": ["--disable-network-policy=true"], "env": []},
                "tasks": tasks,
            },
        }
        if job.extras.hived_scheduler is not None:
            vcjob["spec"]["priorityClassName"] = (
                f"pai-{job.extras.hived_scheduler.job_priority_class}"
            )
        objects = [m for m in (secret_manifest(job, names, labels),) if m is not None]
        objects.append(headless_service(names, labels))
        objects.append(vcjob)
        return Built(objects=objects, primary=len(objects) - 1)

    def stop_steps(self, primary: Manifest, names: JobNames) -> list[StopStep]:
        meta = primary["metadata"]
        command = {
            "apiVersion": VOLCANO_COMMAND.api_version,
            "kind": "Command",
            "metadata": {
                "generateName": f"{names.base}-abort-",
                "ownerReferences": [
                    {
                        "apiVersion": VOLCANO_JOB.api_version,
                        "kind": "Job",
                        "name": meta["name"],
                        "uid": meta.get("uid", ""),
                    }
                ],
            },
            "action": "AbortJob",
            "target": {
                "apiVersion": VOLCANO_JOB.api_version,
                "kind": "Job",
                "name": meta["name"],
                "uid": meta.get("uid", ""),
                "controller": True,
            },
            "reason": "StoppedByUser",
            "message": f"stopped by {names.user}",
        }
        return [StopStep("create", VOLCANO_COMMAND, body=command)]

    def waiting_reason(
        self,
        job: JobProtocol,
        *,
        vc: VirtualCluster | None,
        events: Sequence[Manifest],
        related: Mapping[Kind, list[Manifest]],
        peers: Mapping[str, VirtualCluster] | None = None,
    ) -> str:
        # Reclaimed: the job's own policy (PodEvicted → RestartJob) requeued it.
        reclaimed = preemption_reason(job, job.virtual_cluster, events, peers or {})
        return reclaimed or super().waiting_reason(
            job, vc=vc, events=events, related=related, peers=peers
        )

    def virtual_clusters(
        self, objects: ObjectsOf, jobs: list[JobSummary], cluster: Resources | None
    ) -> list[VirtualCluster] | None:
        # With no cluster size, what a queue does not cap is unlimited (a queue with no
        # capability, deserved or guarantee, like Volcano's `default`, takes any job).
        return queue_virtual_clusters(
            objects(VOLCANO_QUEUE),
            jobs,
            cluster if cluster is not None else vcs.UNLIMITED,
            self.options.gpu_resource,
        )
