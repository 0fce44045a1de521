"""What every flavour provides: the objects of a job (in creation order), how peers are
named, how a stop is expressed, and which kinds the watch cache follows."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, ClassVar

from ....spec.protocol import JobProtocol
from ....spec.render import public_spec
from ..naming import (
    ANN_FLAVOR,
    ANN_JOB_ID,
    ANN_NAME,
    ANN_NAMES,
    ANN_SPEC,
    ANN_USER,
    LABEL_PRIMARY,
    JobNames,
    base_labels,
)
from ..pods import Manifest, PeerHost, PodOptions, default_peer_host
from ..resources import CONFIG_MAP, EVENT, POD, Kind


@dataclass(frozen=True)
class Built:
    """A job's objects in creation order; ``objects[primary]`` holds the spec and owns the
    rest (the backend sets ownerReferences once it knows the primary's uid)."""

    objects: list[Manifest]
    primary: int

    @property
    def primary_object(self) -> Manifest:
        return self.objects[self.primary]


@dataclass(frozen=True)
class StopStep:
    """One API call of a stop: ``create`` a manifest, ``patch`` an object, or
    ``delete_pods`` (the job's pods, by label)."""

    op: str
    kind: Kind | None = None
    name: str | None = None
    body: Manifest = field(default_factory=dict)


def primary_metadata(
    job: JobProtocol, names: JobNames, flavor: str, *, extra_labels: dict[str, str] | None = None
) -> Manifest:
    """Labels and annotations of the object a job is listed from. The spec is stored as
    users may see it (secrets hidden), with the generated names."""
    return {
        "name": names.base,
        "labels": {
            **base_labels(names, job.virtual_cluster),
            LABEL_PRIMARY: "true",
            **(extra_labels or {}),
        },
        "annotations": {
            ANN_JOB_ID: names.job_id,
            ANN_USER: names.user,
            ANN_NAME: names.name,
            ANN_NAMES: names.to_json(),
            ANN_FLAVOR: flavor,
            ANN_SPEC: json.dumps(public_spec(job), sort_keys=True, separators=(",", ":")),
        },
    }


class Flavor:
    name: ClassVar[str] = "abstract"
    #: The kind of the object holding the spec.
    primary_kind: ClassVar[Kind] = CONFIG_MAP
    #: Namespaced kinds the watch cache follows (the primary kind, pods and events always).
    extra_kinds: ClassVar[tuple[Kind, ...]] = ()
    #: Pod annotation carrying the instance index, for per-role templates.
    index_annotation: ClassVar[str | None] = None

    def __init__(self, options: PodOptions, **settings: Any) -> None:
        self.options = options
        self.settings = settings

    @property
    def watched(self) -> tuple[Kind, ...]:
        kinds = [self.primary_kind, POD, EVENT, *self.extra_kinds]
        return tuple(dict.fromkeys(kinds))

    def peer_host(self, names: JobNames, role: str, index: int) -> str:
        return default_peer_host(names, role, index)

    @property
    def peer(self) -> PeerHost:
        return self.peer_host

    def build(self, job: JobProtocol, names: JobNames) -> Built:
        raise NotImplementedError

    def stop_steps(self, primary: Manifest, names: JobNames) -> list[StopStep]:
        """Default: delete the pods (what remains is listed as STOPPED)."""
        return [StopStep("delete_pods")]

    def role_index(self, pod: Manifest) -> tuple[str | None, int | None]:
        """(role slug, index) of one of the job's pods."""
        meta = pod.get("metadata") or {}
        labels = meta.get("labels") or {}
        annotations = meta.get("annotations") or {}
        role = labels.get("jupyter-pai.io/role")
        raw = labels.get("jupyter-pai.io/index")
        if raw is None and self.index_annotation:
            raw = annotations.get(self.index_annotation)
        try:
            return role, int(raw) if raw is not None else None
        except ValueError:
            return role, None


def config_map_primary(job: JobProtocol, names: JobNames, flavor: str) -> Manifest:
    """For flavours with no single workload object: a ConfigMap stands for the job."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": primary_metadata(job, names, flavor),
        "data": {"jobId": names.job_id},
    }
