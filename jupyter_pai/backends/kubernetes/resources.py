"""The Kubernetes resource kinds the backend creates and watches."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Kind:
    api_version: str
    kind: str
    plural: str
    namespaced: bool = True

    @property
    def group(self) -> str:
        return self.api_version.rpartition("/")[0]

    @property
    def version(self) -> str:
        return self.api_version.rpartition("/")[2]

    @property
    def core(self) -> bool:
        return self.group == ""


POD = Kind("v1", "Pod", "pods")
EVENT = Kind("v1", "Event", "events")
SERVICE = Kind("v1", "Service", "services")
SECRET = Kind("v1", "Secret", "secrets")
CONFIG_MAP = Kind("v1", "ConfigMap", "configmaps")
PVC = Kind("v1", "PersistentVolumeClaim", "persistentvolumeclaims")
RESOURCE_QUOTA = Kind("v1", "ResourceQuota", "resourcequotas")
NODE = Kind("v1", "Node", "nodes", namespaced=False)
BATCH_JOB = Kind("batch/v1", "Job", "jobs")
PRIORITY_CLASS = Kind("scheduling.k8s.io/v1", "PriorityClass", "priorityclasses", False)
GANG_POD_GROUP = Kind("scheduling.k8s.io/v1alpha2", "PodGroup", "podgroups")
VOLCANO_JOB = Kind("batch.volcano.sh/v1alpha1", "Job", "jobs")
VOLCANO_POD_GROUP = Kind("scheduling.volcano.sh/v1beta1", "PodGroup", "podgroups")
VOLCANO_QUEUE = Kind("scheduling.volcano.sh/v1beta1", "Queue", "queues", namespaced=False)
VOLCANO_COMMAND = Kind("bus.volcano.sh/v1alpha1", "Command", "commands")
JOBSET = Kind("jobset.x-k8s.io/v1alpha2", "JobSet", "jobsets")
KUEUE_LOCAL_QUEUE = Kind("kueue.x-k8s.io/v1beta2", "LocalQueue", "localqueues")
KUEUE_WORKLOAD = Kind("kueue.x-k8s.io/v1beta2", "Workload", "workloads")
KUEUE_CLUSTER_QUEUE = Kind("kueue.x-k8s.io/v1beta2", "ClusterQueue", "clusterqueues", False)

BY_KIND = {
    (k.api_version, k.kind): k
    for k in (
        POD,
        EVENT,
        SERVICE,
        SECRET,
        CONFIG_MAP,
        PVC,
        RESOURCE_QUOTA,
        NODE,
        BATCH_JOB,
        PRIORITY_CLASS,
        GANG_POD_GROUP,
        VOLCANO_JOB,
        VOLCANO_POD_GROUP,
        VOLCANO_QUEUE,
        VOLCANO_COMMAND,
        JOBSET,
        KUEUE_LOCAL_QUEUE,
        KUEUE_WORKLOAD,
        KUEUE_CLUSTER_QUEUE,
    )
}


def kind_of(manifest: dict[str, object]) -> Kind:
    return BY_KIND[(str(manifest["apiVersion"]), str(manifest["kind"]))]


def owner_reference(obj: dict[str, Any], kind: Kind | None = None) -> dict[str, Any]:
    """A reference making ``obj`` (of ``kind``, else its own apiVersion and kind: a list's
    items carry neither) the owner of another object, which the garbage collector then
    deletes with it; not blocking the owner's deletion."""
    meta = obj["metadata"]
    return {
        "apiVersion": kind.api_version if kind else obj["apiVersion"],
        "kind": kind.kind if kind else obj["kind"],
        "name": meta["name"],
        "uid": meta["uid"],
        "blockOwnerDeletion": False,
    }
