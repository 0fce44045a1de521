"""HiveD: one pod per instance scheduled by ``hivedscheduler`` with OpenPAI's
``pod-scheduling-spec`` annotation (virtual cluster, priority, SKU, affinity group = gang)
and the priority class of ``extras.hivedScheduler.jobPriorityClass``. HiveD, not the GPU
device plugin, picks the GPUs; the container sees them through the isolation annotation.

A ConfigMap stands for the job (HiveD has no job object); stop deletes the pods. The
virtual clusters are HiveD's own, read from its web server (``hived_url``).
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from ....errors import FieldError, SpecError
from ....spec.protocol import PRIORITY_CLASSES, JobProtocol
from ...completion_policy import Decision
from ...models import JobSummary, Resources, VirtualCluster
from ..naming import JobNames, base_labels
from ..pods import Manifest, PodOptions
from .base import (
    Built,
    Flavor,
    FlavorSettings,
    ObjectsOf,
    StopStep,
    Waiting,
    companions,
    config_map_primary,
)
from .hived_cells import HivedCells, virtual_clusters

SCHEDULER = "hivedscheduler"
SPEC_ANNOTATION = "hivedscheduler.microsoft.com/pod-scheduling-spec"
ISOLATION_ANNOTATION = "hivedscheduler.microsoft.com/pod-leaf-cell-isolation"
ENABLE_RESOURCE = "hivedscheduler.microsoft.com/pod-scheduling-enable"
# What HiveD's filter answers kube-scheduler for a pod it cannot place (the scheduler's
# FailedScheduling event carries it).
_HIVED_WAIT = re.compile(r"Pod is waiting for preemptible or free resource to appear: ([^,.]+)")
#: A pod's scheduling spec, as anyone who may create pods in the namespace writes it, is
#: read only this long (ours are a few hundred bytes), without YAML aliases and into the
#: two fields that count: bounded however it is written, so it is read where the pod is.
SPEC_MAX_CHARACTERS = 4096
MAX_LEAF_CELLS = 4096


class _NoAliases(yaml.SafeLoader):
    """Plain data, no aliases, nested at most :data:`MAX_DEPTH` deep (PyYAML's composer
    recurses per level: ``[[[…`` would otherwise reach Python's recursion limit)."""

    MAX_DEPTH = 16

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            raise yaml.YAMLError("an alias")
        self._depth = getattr(self, "_depth", 0) + 1
        try:
            if self._depth > self.MAX_DEPTH:
                raise yaml.YAMLError("nested too deep")
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


@functools.lru_cache(maxsize=512)
def read_scheduling_spec(text: str) -> tuple[int, str | None] | None:
    """(leafCellNumber, leafCellType) of a pod-scheduling-spec annotation; None for one
    that is too long, not YAML, not a map or whose fields are not a count and a name."""
    if len(text) > SPEC_MAX_CHARACTERS:
        return None
    try:
        spec = yaml.load(text, Loader=_NoAliases)  # a SafeLoader: plain data only
    except yaml.YAMLError:
        return None
    if not isinstance(spec, dict):
        return None
    number, cell_type = spec.get("leafCellNumber", 0), spec.get("leafCellType")
    if number is None:
        number = 0
    if isinstance(number, bool) or not isinstance(number, int):
        return None
    if not 0 <= number <= MAX_LEAF_CELLS or not isinstance(cell_type, str | None):
        return None
    return number, cell_type


def leaf_cells(
    job: JobProtocol, role: str, cpu_sku: str, gpu_sku: str | None = None
) -> tuple[int, str | None]:
    """How many leaf cells of which type a task of ``role`` asks: its GPUs (of the SKU the
    job names, else ``gpu_sku``), or, for a task without GPUs, one cell of the CPU SKU per
    CPU (``cpu_sku``: a SKU whose cell is one CPU, as in OpenPAI's CPU-only VCs)."""
    spec = job.task_roles[role].resource_per_instance
    hived = job.extras.hived_scheduler
    hr = hived.task_roles.get(role) if hived else None
    if spec.gpu > 0:
        return spec.gpu, (hr.sku_type if hr and hr.sku_type else gpu_sku)
    return max(1, math.ceil(spec.cpu)), cpu_sku


def scheduling_spec(
    job: JobProtocol, names: JobNames, role: str, cpu_sku: str = "", gpu_sku: str | None = None
) -> dict[str, Any]:
    """``gpu_sku``: the GPU SKU of tasks whose job names none (where the VC also has CPU
    cells, HiveD would otherwise count those as the task's GPUs)."""
    hived = job.extras.hived_scheduler
    priority_class = hived.job_priority_class if hived else "test"
    hr = hived.task_roles.get(role) if hived else None
    cells, cell_type = leaf_cells(job, role, cpu_sku, gpu_sku)

    def group_of(r: str) -> str:
        h = hived.task_roles.get(r) if hived else None
        group = (h.affinity_group_name if h else None) or "default"
        # HiveD places an affinity group within one chain of cells, so one SKU: the tasks
        # without GPUs of a gang form their own group, on the CPU cells.
        if job.task_roles[r].resource_per_instance.gpu == 0 and cpu_sku:
            group += "-cpu"
        return group

    group = group_of(role)
    members_roles = [r for r in job.task_roles if group_of(r) == group]
    if not job.gang_allocation:
        group, members_roles = f"{group}-{names.roles[role]}", [role]
    members = [
        {"podNumber": job.task_roles[r].instances, "leafCellNumber": leaf_cells(job, r, cpu_sku)[0]}
        for r in members_roles
    ]
    out: dict[str, Any] = {
        "virtualCluster": job.virtual_cluster,
        "priority": PRIORITY_CLASSES[priority_class],
        "leafCellNumber": cells,
        "affinityGroup": {"name": f"{names.base}/{group}", "members": members},
        # HiveD binds pods itself; without this it ignores what kube-scheduler's filters
        # (the backend's node selector) left and may bind anywhere in the VC's cells.
        "ignoreK8sSuggestedNodes": False,
    }
    if hr and hr.pinned_cell_id:
        out["pinnedCellId"] = hr.pinned_cell_id
    elif cell_type:
        out["leafCellType"] = cell_type
    return out


@dataclass(frozen=True)
class HivedSettings(FlavorSettings):
    #: The SKU of CPU cells, for tasks without GPUs; empty: such tasks are refused.
    cpu_sku: str = ""
    #: HiveD's web server; empty: any VC name is accepted (HiveD decides).
    url: str = ""


class HivedFlavor(Flavor):
    name = "hived"
    settings_type = HivedSettings
    settings: HivedSettings

    def __init__(self, options: PodOptions, settings: FlavorSettings | None = None) -> None:
        super().__init__(options, settings)
        #: None: no HiveD address configured, so any VC name is accepted (HiveD decides).
        self.cells = (
            HivedCells(self.settings.url, cpu_sku=self.cpu_sku) if self.settings.url else None
        )

    @property
    def cpu_sku(self) -> str:
        return self.settings.cpu_sku

    def pod_gpus(self, pod: Manifest) -> int | None:
        # HiveD gives GPUs as leaf cells, not through the device plugin's resource.
        text = ((pod.get("metadata") or {}).get("annotations") or {}).get(SPEC_ANNOTATION)
        if not text or not isinstance(text, str):
            return None
        spec = read_scheduling_spec(text)
        if spec is None:  # not one HiveD could place either: what the pod requests counts
            return None
        number, cell_type = spec
        if self.cpu_sku and cell_type == self.cpu_sku:
            return 0
        return number

    def _gpu_sku(self, vc: str) -> str | None:
        """The VC's one GPU SKU, where CPU cells make naming it necessary (from HiveD's
        status, read just before a submission is built)."""
        if not self.cpu_sku or self.cells is None or self.cells.last is None:
            return None
        found = self.cells.last.get(vc)
        types = found.leaf_cell_types if found else ()
        return types[0] if len(types) == 1 else None

    def ending_steps(
        self, primary: Manifest, names: JobNames, decision: Decision
    ) -> list[StopStep]:
        # The pods are the job: those that ended stay, with their logs, as on any flavor.
        return [StopStep("delete_running_pods")]

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
        objects = [config_map_primary(job, names, self.name), *companions(job, names, labels)]
        hived = job.extras.hived_scheduler
        priority_class = f"pai-{hived.job_priority_class if hived else 'test'}"
        for role, spec in job.task_roles.items():
            spec_of_role = scheduling_spec(
                job, names, role, self.cpu_sku, self._gpu_sku(job.virtual_cluster)
            )
            annotation = yaml.safe_dump(spec_of_role, sort_keys=True)
            # The container runtime exposes the GPUs HiveD bound; a task on CPU cells has
            # none (its cells' indices are not devices).
            devices: dict[str, Any] = (
                {
                    "valueFrom": {
                        "fieldRef": {"fieldPath": f"metadata.annotations['{ISOLATION_ANNOTATION}']"}
                    }
                }
                if spec.resource_per_instance.gpu > 0
                else {"value": "void"}
            )
            for i in range(spec.instances):
                template = self.pod_template(
                    job,
                    names,
                    role,
                    index=i,
                    scheduler_name=SCHEDULER,
                    priority_class=priority_class,
                    hostname=names.pod_host(role, i),
                    subdomain=names.service,
                    extra_annotations={SPEC_ANNOTATION: annotation},
                    extra_limits={ENABLE_RESOURCE: "1"},
                    gpu_in_resources=False,
                    extra_env=[{"name": "NVIDIA_VISIBLE_DEVICES", **devices}],
                )
                if spec.task_retry_count > 0:  # no controller replaces a bare pod
                    template["spec"]["restartPolicy"] = "OnFailure"
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
        """HiveD places cells only: its filter refuses a pod whose spec asks for none
        ("LeafCellNumber is non-positive"), so without a CPU SKU (``hived_cpu_sku``) a task
        without GPUs would wait for good. Refused at submission instead, naming the role."""
        errors = [
            FieldError(
                f"taskRoles.{role}.resourcePerInstance.gpu",
                "HiveD schedules GPU cells and this server names no CPU SKU "
                "(KubernetesBackend.hived_cpu_sku): every task needs at least 1 GPU on the "
                "hived flavor (a task without GPUs never gets a place)",
            )
            for role, spec in job.task_roles.items()
            if spec.resource_per_instance.gpu < 1 and not self.cpu_sku
        ]
        hived = job.extras.hived_scheduler
        sku_named = {r for r, h in (hived.task_roles if hived else {}).items() if h.sku_type}
        vc_known = known is None or job.virtual_cluster in known  # else: the VC's error
        errors += self._unknown_skus(job) if vc_known else []
        if self.cpu_sku and vc_known and self._gpu_sku(job.virtual_cluster) is None:
            # HiveD may give a task that names no SKU any leaf cells, CPU cells included.
            errors += [
                FieldError(
                    f"extras.hivedScheduler.taskRoles.{role}.skuType",
                    f"virtual cluster {job.virtual_cluster} has CPU cells ({self.cpu_sku}) and "
                    "no one GPU SKU this server knows of: name the role's GPU SKU, or set "
                    "KubernetesBackend.hived_url so that the VC's is read from HiveD",
                )
                for role, spec in job.task_roles.items()
                if spec.resource_per_instance.gpu > 0 and role not in sku_named
            ]
        if errors:
            raise SpecError(errors)
        super().check_virtual_cluster(job, known)

    def _unknown_skus(self, job: JobProtocol) -> list[FieldError]:
        """A GPU role's SKU (its GPU type) that the job's VC has no cells of, read from
        HiveD: HiveD would leave its pods waiting for good."""
        if self.cells is None or self.cells.last is None:
            return []
        vc = self.cells.last.get(job.virtual_cluster)
        if vc is None:
            return []
        have = ", ".join(f"{sku} ({n} GPUs)" for sku, n, _ in vc.by_type) or "none"
        return [
            FieldError(
                f"extras.hivedScheduler.taskRoles.{role}.skuType",
                f"virtual cluster {vc.name} has no HiveD SKU {sku!r}; its GPU types: {have}",
            )
            for role, spec in job.task_roles.items()
            if (sku := job.gpu_type(role))
            and spec.resource_per_instance.gpu > 0
            and sku not in {t for t, _, _ in vc.by_type}
        ]

    def why_waiting(self, w: Waiting) -> str:
        newest = sorted(
            w.events, key=lambda e: str(e.get("lastTimestamp") or e.get("eventTime") or "")
        )
        for event in reversed(newest):
            m = _HIVED_WAIT.search(str(event.get("message") or ""))
            if m:
                return f"HiveD: {m[1]}; the job needs {w.job.total_gpus} GPUs"
        return super().why_waiting(w)
