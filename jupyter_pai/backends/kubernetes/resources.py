"""The Kubernetes resource kinds the backend creates and watches."""

from __future__ import annotations

from collections.abc import Iterable
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
#: The kinds of the objects every flavor may make; a flavor's own are its module's.
CORE_KINDS = (
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
)


def kind_of(manifest: dict[str, object], own: Iterable[Kind] = ()) -> Kind:
    """The kind of ``manifest``: a core one or one of ``own`` (a flavor's kinds)."""
    key = (str(manifest["apiVersion"]), str(manifest["kind"]))
    for kind in (*own, *CORE_KINDS):
        if (kind.api_version, kind.kind) == key:
            return kind
    raise KeyError(key)


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
