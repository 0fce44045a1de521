"""HiveD: one pod per instance scheduled by ``hivedscheduler`` with OpenPAI's
``pod-scheduling-spec`` annotation (virtual cluster, priority, SKU, affinity group = gang)
and the priority class of ``extras.hivedScheduler.jobPriorityClass``. HiveD, not the GPU
device plugin, picks the GPUs; the container sees them through the isolation annotation.

A ConfigMap stands for the job (HiveD has no job object); stop deletes the pods. The
virtual clusters are HiveD's own, read from its web server (``hived_url``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import yaml

from ....errors import FieldError, SpecError
from ....spec.protocol import PRIORITY_CLASSES, JobProtocol
from ...models import JobSummary, Resources, VirtualCluster
from ..naming import JobNames, base_labels
from ..pods import Manifest, PodOptions, headless_service, pod_template, secret_manifest
from ..resources import Kind
from .base import Built, Flavor, ObjectsOf, config_map_primary
from .hived_cells import HivedCells, virtual_clusters

SCHEDULER = "hivedscheduler"
SPEC_ANNOTATION = "hivedscheduler.microsoft.com/pod-scheduling-spec"
ISOLATION_ANNOTATION = "hivedscheduler.microsoft.com/pod-leaf-cell-isolation"
ENABLE_RESOURCE = "hivedscheduler.microsoft.com/pod-scheduling-enable"
# What HiveD's filter answers kube-scheduler for a pod it cannot place (the scheduler's
# FailedScheduling event carries it).
_HIVED_WAIT = re.compile(r"Pod is waiting for preemptible or free resource to appear: ([^,.]+)")


def scheduling_spec(job: JobProtocol, names: JobNames, role: str) -> dict[str, Any]:
    hived = job.extras.hived_scheduler
    priority_class = hived.job_priority_class if hived else "test"
    hr = hived.task_roles.get(role) if hived else None
    spec = job.task_roles[role]

    def group_of(r: str) -> str:
        h = hived.task_roles.get(r) if hived else None
        return (h.affinity_group_name if h else None) or "default"

    group = group_of(role)
    members_roles = [r for r in job.task_roles if group_of(r) == group]
    if not job.gang_allocation:
        group, members_roles = f"{group}-{names.roles[role]}", [role]
    members = [
        {
            "podNumber": job.task_roles[r].instances,
            "leafCellNumber": job.task_roles[r].resource_per_instance.gpu,
        }
        for r in members_roles
    ]
    out: dict[str, Any] = {
        "virtualCluster": job.virtual_cluster,
        "priority": PRIORITY_CLASSES[priority_class],
        "leafCellNumber": spec.resource_per_instance.gpu,
        "affinityGroup": {"name": f"{names.base}/{group}", "members": members},
        # HiveD binds pods itself; without this it ignores what kube-scheduler's filters
        # (the backend's node selector) left and may bind anywhere in the VC's cells.
        "ignoreK8sSuggestedNodes": False,
    }
    if hr and hr.pinned_cell_id:
        out["pinnedCellId"] = hr.pinned_cell_id
    elif hr and hr.sku_type:
        out["leafCellType"] = hr.sku_type
    return out


class HivedFlavor(Flavor):
    name = "hived"

    def __init__(self, options: PodOptions, **settings: Any) -> None:
        super().__init__(options, **settings)
        url = str(settings.get("hived_url") or "")
        #: None: no HiveD address configured, so any VC name is accepted (HiveD decides).
        self.cells = HivedCells(url) if url else None

    async def refresh(self) -> None:
        if self.cells is not None:
            await self.cells.refresh()

    def virtual_clusters(
        self, objects: ObjectsOf, jobs: list[JobSummary], cluster: Resources | None
    ) -> list[VirtualCluster] | None:
        if self.cells is None or self.cells.last is None:
            return None
        return virtual_clusters(self.cells.last, jobs, cluster)

    def build(self, job: JobProtocol, names: JobNames) -> Built:
        labels = base_labels(names, job.virtual_cluster)
        objects: list[Manifest] = [config_map_primary(job, names, self.name)]
        secret = secret_manifest(job, names, labels)
        if secret is not None:
            objects.append(secret)
        objects.append(headless_service(names, labels))
        hived = job.extras.hived_scheduler
        priority_class = f"pai-{hived.job_priority_class if hived else 'test'}"
        for role, spec in job.task_roles.items():
            annotation = yaml.safe_dump(scheduling_spec(job, names, role), sort_keys=True)
            for i in range(spec.instances):
                template = pod_template(
                    job,
                    names,
                    self.options,
                    role,
                    index=i,
                    peer_host=self.peer_host,
                    scheduler_name=SCHEDULER,
                    priority_class=priority_class,
                    hostname=names.pod_host(role, i),
                    subdomain=names.service,
                    extra_annotations={SPEC_ANNOTATION: annotation},
                    extra_limits={ENABLE_RESOURCE: "1"},
                    gpu_in_resources=False,
                    extra_env=[
                        {
                            "name": "NVIDIA_VISIBLE_DEVICES",
                            "valueFrom": {
                                "fieldRef": {
                                    "fieldPath": f"metadata.annotations['{ISOLATION_ANNOTATION}']"
                                }
                            },
                        }
                    ],
                )
                objects.append(
                    {
                        "apiVersion": "v1",
                        "kind": "Pod",
                        "metadata": {"name": names.pod_host(role, i), **template["metadata"]},
                        "spec": template["spec"],
                    }
                )
        return Built(objects=objects, primary=0)

    def check_virtual_cluster(
        self, job: JobProtocol, known: Mapping[str, VirtualCluster] | None
    ) -> None:
        """HiveD places GPU cells only: its filter refuses a pod whose spec asks for none
        ("LeafCellNumber is non-positive"), so such a pod would wait for good. Refused at
        submission instead, naming the role."""
        errors = [
            FieldError(
                f"taskRoles.{role}.resourcePerInstance.gpu",
                "HiveD schedules GPU cells: every task needs at least 1 GPU on the hived "
                "flavour (a task without GPUs never gets a place)",
            )
            for role, spec in job.task_roles.items()
            if spec.resource_per_instance.gpu < 1
        ]
        if errors:
            raise SpecError(errors)
        super().check_virtual_cluster(job, known)

    def waiting_reason(
        self,
        job: JobProtocol,
        *,
        vc: VirtualCluster | None,
        events: Sequence[Manifest],
        related: Mapping[Kind, list[Manifest]],
        peers: Mapping[str, VirtualCluster] | None = None,
    ) -> str:
        newest = sorted(
            events, key=lambda e: str(e.get("lastTimestamp") or e.get("eventTime") or "")
        )
        for event in reversed(newest):
            m = _HIVED_WAIT.search(str(event.get("message") or ""))
            if m:
                return f"HiveD: {m[1]}; the job needs {job.total_gpus} GPUs"
        return super().waiting_reason(job, vc=vc, events=events, related=related, peers=peers)
