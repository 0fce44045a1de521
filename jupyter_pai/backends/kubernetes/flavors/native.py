"""Kubernetes' own gang scheduling (``scheduling.k8s.io`` PodGroup, KEP-4671) with one
Indexed batch Job per task role; a virtual cluster is a PriorityClass ``vc-<name>`` whose
GPUs a ResourceQuota caps. For clusters without Volcano (and the project's test cluster).

* gang: every pod names the job's PodGroup, whose ``minCount`` is every instance;
* ``taskRetryCount`` → ``backoffLimitPerIndex``; eviction (``DisruptionTarget``) does not
  count as a failure and the pod is recreated;
* the completion policy across roles is enforced by the backend (batch Jobs are per role).

Stop suspends every batch Job (their pods go) and marks the job stopped.
"""

from __future__ import annotations

from typing import ClassVar

from ....spec.protocol import JobProtocol
from ..naming import JobNames, base_labels
from ..pods import Manifest, headless_service, pod_template, secret_manifest
from ..resources import BATCH_JOB, GANG_POD_GROUP, RESOURCE_QUOTA, Kind
from .base import Built, Flavor, StopStep, config_map_primary

INDEX_ANNOTATION = "batch.kubernetes.io/job-completion-index"
VC_PRIORITY_PREFIX = "vc-"


class NativeFlavor(Flavor):
    name = "native"
    extra_kinds: ClassVar[tuple[Kind, ...]] = (BATCH_JOB, GANG_POD_GROUP, RESOURCE_QUOTA)
    index_annotation = INDEX_ANNOTATION

    @property
    def priority_prefix(self) -> str:
        return str(self.settings.get("priority_prefix", VC_PRIORITY_PREFIX))

    def build(self, job: JobProtocol, names: JobNames) -> Built:
        labels = base_labels(names, job.virtual_cluster)
        objects: list[Manifest] = [config_map_primary(job, names, self.name)]
        secret = secret_manifest(job, names, labels)
        if secret is not None:
            objects.append(secret)
        objects.append(headless_service(names, labels))
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
            template = pod_template(
                job,
                names,
                self.options,
                role,
                index_annotation=INDEX_ANNOTATION,
                peer_host=self.peer_host,
                priority_class=self.priority_prefix + job.virtual_cluster,
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
        steps = [
            StopStep("patch", BATCH_JOB, names.role_object(role), {"spec": {"suspend": True}})
            for role in names.roles
        ]
        # Pods of a finished index are not removed by suspend; delete whatever is left.
        return [*steps, StopStep("delete_pods")]
