"""Kueue: a JobSet (one replicated Job per task role) labelled with the LocalQueue of the
virtual cluster. Kueue admits the whole JobSet at once (quota gang), and JobSet gives the
pods stable names in the headless Service it creates (``<jobset>-<role>-0-<index>``).

* created suspended; Kueue resumes it on admission;
* ``taskRetryCount`` → ``backoffLimitPerIndex``; ``jobRetryCount`` → ``failurePolicy.maxRestarts``;
* roles whose ``minSucceededInstances`` is all instances complete the job (``successPolicy``);

Stop suspends the JobSet.
"""

from __future__ import annotations

from typing import Any, ClassVar

from ....spec.protocol import JobProtocol
from ..naming import JobNames, base_labels
from ..pods import Manifest, pod_template, secret_manifest
from ..resources import JOBSET, KUEUE_LOCAL_QUEUE, Kind
from .base import Built, Flavor, StopStep, primary_metadata

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
INDEX_ANNOTATION = "batch.kubernetes.io/job-completion-index"


class KueueFlavor(Flavor):
    name = "kueue"
    primary_kind = JOBSET
    extra_kinds: ClassVar[tuple[Kind, ...]] = (KUEUE_LOCAL_QUEUE,)
    index_annotation = INDEX_ANNOTATION

    def peer_host(self, names: JobNames, role: str, index: int) -> str:
        return f"{names.role_object(role)}-0-{index}.{names.service}"

    def build(self, job: JobProtocol, names: JobNames) -> Built:
        labels = base_labels(names, job.virtual_cluster)
        replicated = []
        for role, spec in job.task_roles.items():
            template = pod_template(
                job,
                names,
                self.options,
                role,
                index_annotation=INDEX_ANNOTATION,
                peer_host=self.peer_host,
            )
            replicated.append(
                {
                    "name": names.roles[role],
                    "replicas": 1,
                    "template": {
                        "metadata": {
                            "labels": {**labels, "jupyter-pai.io/role": names.roles[role]}
                        },
                        "spec": {
                            "completionMode": "Indexed",
                            "completions": spec.instances,
                            "parallelism": spec.instances,
                            "backoffLimitPerIndex": spec.task_retry_count,
                            "template": template,
                        },
                    },
                }
            )
        complete = [
            names.roles[r] for r, s in job.task_roles.items() if s.min_succeeded == s.instances
        ]
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
        objects = [m for m in (secret_manifest(job, names, labels),) if m is not None]
        objects.append(jobset)
        return Built(objects=objects, primary=len(objects) - 1)

    def stop_steps(self, primary: Manifest, names: JobNames) -> list[StopStep]:
        return [StopStep("patch", JOBSET, names.base, {"spec": {"suspend": True}})]
