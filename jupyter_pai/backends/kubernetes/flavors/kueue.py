"""Kueue: a JobSet (one replicated Job per task role) labelled with the LocalQueue of the
virtual cluster. Kueue admits the whole JobSet at once against its ClusterQueue's GPU
quota (a quota gang; kube-scheduler then places each role's Indexed Job as a gang), and
JobSet gives the pods stable names in the headless Service it creates
(``<jobset>-<role>-0-<index>``). Created suspended; Kueue resumes it on admission, and
suspends it again when it preempts it (the pods go, the JobSet waits in the queue and
runs again when readmitted).

OpenPAI's completion policy is written into the JobSet and its Jobs, so JobSet's
controller ends a decided job with no jupyter-pai process running:

* ``taskRetryCount`` → each Job's ``backoffLimitPerIndex``;
* ``minFailedInstances`` n ≥ 1 → the Job's ``maxFailedIndexes: n - 1`` (the Job fails
  when n indexes have failed for good), and any failed Job fails the JobSet, or restarts
  it while ``failurePolicy.maxRestarts`` (= ``jobRetryCount``) allows;
* ``minSucceededInstances`` n ≥ 1 → the Job's ``successPolicy`` (n succeeded indexes
  complete it), and the JobSet's ``successPolicy: Any`` over those roles completes the
  JobSet when one of them completes;
* -1 → nothing: a failed Job of such a role still fails the JobSet (JobSet has no rule
  that ignores a Job's failure), so such jobs are left to a running backend.

Stop deactivates the job's Workload (``spec.active: false``, what Kueue's own docs do):
Kueue evicts it and suspends the JobSet, whose Jobs delete their running pods. Suspending
the JobSet ourselves would not do: Kueue resumes an admitted job that is suspended. A
user therefore needs ``patch`` on Workloads in their namespace (the test cluster grants
it).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, ClassVar

from ....spec.protocol import JobProtocol
from ...completion_policy import Decision
from ...models import JobState, JobSummary, Resources, VirtualCluster
from .. import vc_usage
from ..naming import JobNames, base_labels
from ..pods import Manifest
from ..resources import Kind
from ..states import Ending
from .base import (
    Built,
    Flavor,
    ObjectsOf,
    StopStep,
    Waiting,
    companions,
    primary_metadata,
)
from .kueue_queues import condition, local_queue_targets, queue_virtual_clusters, workload_reason

JOBSET = Kind("jobset.x-k8s.io/v1alpha2", "JobSet", "jobsets")
KUEUE_LOCAL_QUEUE = Kind("kueue.x-k8s.io/v1beta2", "LocalQueue", "localqueues")
KUEUE_WORKLOAD = Kind("kueue.x-k8s.io/v1beta2", "Workload", "workloads")
KUEUE_CLUSTER_QUEUE = Kind("kueue.x-k8s.io/v1beta2", "ClusterQueue", "clusterqueues", False)
#: A JobSet's terminal conditions, as its controller sets them once it decides the end.
JOBSET_ENDINGS = {"Completed": JobState.SUCCEEDED, "Failed": JobState.FAILED}
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
INDEX_ANNOTATION = "batch.kubernetes.io/job-completion-index"


def enforced(job: JobProtocol) -> frozenset[tuple[str, str]]:
    """The (role, rule) decisions JobSet's policies act on by themselves."""
    out: set[tuple[str, str]] = set()
    for role, spec in job.task_roles.items():
        if spec.min_failed >= 1:
            out.add((role, "failed"))
        if spec.min_succeeded >= 1:
            out.add((role, "succeeded"))
    return frozenset(out)


class KueueFlavor(Flavor):
    name = "kueue"
    primary_kind = JOBSET
    # Kueue makes the Workload (owned by the JobSet); LocalQueues are the admin's.
    foreign_kinds: ClassVar[tuple[Kind, ...]] = (KUEUE_WORKLOAD, KUEUE_LOCAL_QUEUE)
    cluster_kinds: ClassVar[tuple[Kind, ...]] = (KUEUE_CLUSTER_QUEUE,)
    index_annotation = INDEX_ANNOTATION
    # Kueue marks the Workload Evicted, then suspends the JobSet, then the Jobs delete
    # their pods: following the logs from the mark wins the race with the deletion.
    eviction_kind = KUEUE_WORKLOAD

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # VC (LocalQueue) → ClusterQueue, as the last VC listing saw them.
        self._targets: dict[str, str] = {}

    def peer_host(self, names: JobNames, role: str, index: int) -> str:
        return f"{names.role_object(role)}-0-{index}.{names.service}"

    def evicted_at(self, obj: Manifest) -> str | None:
        # A deactivated Workload is a stop (the job ends), not an eviction it outlives.
        evicted = condition(obj, "Evicted")
        if not (obj.get("spec") or {}).get("active", True) or evicted.get("status") != "True":
            return None
        return str(evicted.get("lastTransitionTime") or "") or None

    def ended(self, primary: Manifest) -> Ending | None:
        for cond in (primary.get("status") or {}).get("conditions") or []:
            if cond.get("status") == "True" and cond.get("type") in JOBSET_ENDINGS:
                return Ending(JOBSET_ENDINGS[cond["type"]])
        return None

    def restarts(self, primary: Manifest) -> int:
        return int((primary.get("status") or {}).get("restarts") or 0)

    def build(self, job: JobProtocol, names: JobNames) -> Built:
        labels = base_labels(names, job.virtual_cluster)
        replicated = []
        for role, spec in job.task_roles.items():
            template = self.pod_template(job, names, role)
            job_spec: dict[str, Any] = {
                "completionMode": "Indexed",
                "completions": spec.instances,
                "parallelism": spec.instances,
                "backoffLimitPerIndex": spec.task_retry_count,
                "template": template,
            }
            if spec.min_failed >= 1:
                job_spec["maxFailedIndexes"] = spec.min_failed - 1
            if 1 <= spec.min_succeeded < spec.instances:
                job_spec["successPolicy"] = {"rules": [{"succeededCount": spec.min_succeeded}]}
            replicated.append(
                {
                    "name": names.roles[role],
                    "replicas": 1,
                    "template": {
                        "metadata": {
                            "labels": {**labels, "jupyter-pai.io/role": names.roles[role]}
                        },
                        "spec": job_spec,
                    },
                }
            )
        complete = [names.roles[r] for r, s in job.task_roles.items() if s.min_succeeded >= 1]
        spec_: dict[str, Any] = {
            "suspend": True,
            "network": {"enableDNSHostnames": True, "subdomain": names.service},
            "failurePolicy": {"maxRestarts": job.job_retry_count},
            "replicatedJobs": replicated,
        }
        if complete:
            spec_["successPolicy"] = {"operator": "Any", "targetReplicatedJobs": complete}
        jobset: Manifest = {
            "apiVersion": JOBSET.api_version,
            "kind": "JobSet",
            "metadata": primary_metadata(
                job, names, self.name, extra_labels={QUEUE_LABEL: job.virtual_cluster}
            ),
            "spec": spec_,
        }
        # JobSet makes the headless Service itself.
        objects = [*companions(job, names, labels, service=False), jobset]
        return Built(objects=objects, primary=len(objects) - 1)

    def stop_steps(self, primary: Manifest, names: JobNames) -> list[StopStep]:
        deactivate = {"spec": {"active": False}}
        return [StopStep("patch_owned", KUEUE_WORKLOAD, primary["metadata"]["name"], deactivate)]

    def ends_itself(self, job: JobProtocol, decision: Decision) -> bool:
        return (decision.role, decision.rule) in enforced(job)

    def virtual_clusters(
        self, objects: ObjectsOf, jobs: list[JobSummary], cluster: Resources | None
    ) -> list[VirtualCluster] | None:
        local = objects(KUEUE_LOCAL_QUEUE)
        self._targets = local_queue_targets(local)
        return queue_virtual_clusters(
            local,
            objects(KUEUE_CLUSTER_QUEUE),
            jobs,
            cluster if cluster is not None else vc_usage.UNLIMITED,
            self.options.gpu_resource,
        )

    def why_waiting(self, w: Waiting) -> str:
        workloads = sorted(
            w.related.get(KUEUE_WORKLOAD) or [],
            key=lambda wl: str(wl["metadata"].get("creationTimestamp") or ""),
        )
        reason = workload_reason(
            w.job,
            workloads[-1] if workloads else None,
            w.vc,
            self._targets.get(w.job.virtual_cluster),
        )
        if reason:
            return reason
        # Admitted: the nodes decide now; Kueue's own events are about the quota, done.
        pods = [e for e in w.events if (e.get("involvedObject") or {}).get("kind") != "Workload"]
        return super().why_waiting(replace(w, events=pods))
