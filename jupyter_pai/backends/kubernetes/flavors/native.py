"""Kubernetes' own gang scheduling (``scheduling.k8s.io`` PodGroup, KEP-4671) with one
Indexed batch Job per task role; a virtual cluster is a PriorityClass ``vc-<name>`` whose
GPUs a ResourceQuota caps. For clusters without Volcano (and the project's test cluster).

* gang: every pod names the job's PodGroup, whose ``minCount`` is every instance;
* ``taskRetryCount`` → ``backoffLimitPerIndex``; eviction (``DisruptionTarget``) does not
  count as a failure and the pod is recreated;
* OpenPAI's completion policy cannot be expressed: a batch Job is one role and knows
  nothing of the others (a chief's success cannot end the workers' Job), and its
  ``successPolicy`` / ``backoffLimitPerIndex`` count only its own indexes. A running
  jupyter-pai backend ends decided jobs from its watch cache: it records the outcome and
  suspends every batch Job (their running pods go; finished pods stay, with their logs).

Stop suspends every batch Job (their pods go) and marks the job stopped. A ResourceQuota
cannot lend, so a virtual cluster is its cap and nothing more.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ....spec.protocol import JobProtocol
from ...completion_policy import Decision
from ...models import JobState, JobSummary, Resources, VirtualCluster
from .. import vc_usage
from ..naming import JobNames, base_labels
from ..pods import Manifest
from ..resources import BATCH_JOB, PRIORITY_CLASS, RESOURCE_QUOTA, Kind
from ..states import Obj
from .base import Built, Flavor, FlavorSettings, ObjectsOf, StopStep, companions, config_map_primary

GANG_POD_GROUP = Kind("scheduling.k8s.io/v1alpha2", "PodGroup", "podgroups")
INDEX_ANNOTATION = "batch.kubernetes.io/job-completion-index"
VC_PRIORITY_PREFIX = "vc-"


@dataclass(frozen=True)
class NativeSettings(FlavorSettings):
    #: A virtual cluster is the PriorityClass named this prefix + its name.
    priority_prefix: str = VC_PRIORITY_PREFIX


def priority_class_virtual_clusters(
    priority_classes: list[Obj],
    quotas: list[Obj],
    jobs: list[JobSummary],
    cluster: Resources,
    prefix: str,
    gpu: str,
) -> list[VirtualCluster]:
    out = []
    for pc in sorted(priority_classes, key=lambda p: p["metadata"]["name"]):
        pc_name = pc["metadata"]["name"]
        if not pc_name.startswith(prefix):
            continue
        name = pc_name[len(prefix) :]
        quota = next((q for q in quotas if _quota_scope(q) == pc_name), None)
        if quota is not None:
            hard = vc_usage.resources(
                (quota.get("status") or {}).get("hard") or quota["spec"].get("hard"),
                gpu,
                "requests.",
            )
            used = vc_usage.resources((quota.get("status") or {}).get("used"), gpu, "requests.")
            cap = Resources(
                gpu=hard.gpu,
                cpu=hard.cpu or cluster.cpu,
                memory_mb=hard.memory_mb or cluster.memory_mb,
            )
        else:
            cap = cluster
            used = Resources(
                gpu=sum(
                    j.total_gpu_number
                    for j in jobs
                    if j.virtual_cluster == name and j.state == JobState.RUNNING
                )
            )
        description = str(pc.get("description") or f"priority class {pc_name}")
        out.append(vc_usage.virtual_cluster(name, cap, used, jobs, description))
    return out


def _suspend(names: JobNames) -> list[StopStep]:
    return [
        StopStep("patch", BATCH_JOB, names.role_object(role), {"spec": {"suspend": True}})
        for role in names.roles
    ]


def _quota_scope(quota: Obj) -> str | None:
    for expr in ((quota.get("spec") or {}).get("scopeSelector") or {}).get(
        "matchExpressions"
    ) or []:
        if expr.get("scopeName") == "PriorityClass" and expr.get("operator") == "In":
            values = expr.get("values") or []
            return str(values[0]) if values else None
    return None


class NativeFlavor(Flavor):
    name = "native"
    extra_kinds: ClassVar[tuple[Kind, ...]] = (BATCH_JOB, GANG_POD_GROUP)
    foreign_kinds: ClassVar[tuple[Kind, ...]] = (RESOURCE_QUOTA,)
    cluster_kinds: ClassVar[tuple[Kind, ...]] = (PRIORITY_CLASS,)
    pod_group_kind = GANG_POD_GROUP
    index_annotation = INDEX_ANNOTATION
    settings_type = NativeSettings
    settings: NativeSettings

    def build(self, job: JobProtocol, names: JobNames) -> Built:
        labels = base_labels(names, job.virtual_cluster)
        objects = [config_map_primary(job, names, self.name), *companions(job, names, labels)]
        gang = job.gang_allocation
        if gang:
            objects.append(
                {
                    "apiVersion": GANG_POD_GROUP.api_version,
                    "kind": "PodGroup",
                    "metadata": {"name": names.base, "labels": dict(labels)},
                    "spec": {"schedulingPolicy": {"gang": {"minCount": job.total_instances}}},
                }
            )
        for role, spec in job.task_roles.items():
            template = self.pod_template(
                job,
                names,
                role,
                priority_class=self.settings.priority_prefix + job.virtual_cluster,
                subdomain=names.service,
            )
            if gang:
                template["spec"]["schedulingGroup"] = {"podGroupName": names.base}
            objects.append(
                {
                    "apiVersion": BATCH_JOB.api_version,
                    "kind": "Job",
                    "metadata": {
                        "name": names.role_object(role),
                        "labels": {**labels, "jupyter-pai.io/role": names.roles[role]},
                    },
                    "spec": {
                        "completionMode": "Indexed",
                        "completions": spec.instances,
                        "parallelism": spec.instances,
                        "backoffLimitPerIndex": spec.task_retry_count,
                        "podFailurePolicy": {
                            "rules": [
                                {
                                    "action": "Ignore",
                                    "onPodConditions": [{"type": "DisruptionTarget"}],
                                }
                            ]
                        },
                        "template": template,
                    },
                }
            )
        return Built(objects=objects, primary=0)

    def stop_steps(self, primary: Manifest, names: JobNames) -> list[StopStep]:
        # Pods of a finished index are not removed by suspend; delete whatever is left.
        return [*_suspend(names), StopStep("delete_pods")]

    def ending_steps(
        self, primary: Manifest, names: JobNames, decision: Decision
    ) -> list[StopStep]:
        # Suspending deletes the running pods; those that ended stay, as on any flavor.
        return _suspend(names)

    def virtual_clusters(
        self, objects: ObjectsOf, jobs: list[JobSummary], cluster: Resources | None
    ) -> list[VirtualCluster] | None:
        return priority_class_virtual_clusters(
            objects(PRIORITY_CLASS),
            objects(RESOURCE_QUOTA),
            jobs,
            cluster if cluster is not None else vc_usage.UNLIMITED,
            self.settings.priority_prefix,
            self.options.gpu_resource,
        )
