"""What every flavor provides: the objects of a job (in creation order), how peers are
named, how a stop is expressed, what the scheduler's own object of a job says (its phase,
restarts, and whether the scheduler ends the job), which decisions of OpenPAI's completion
policy the scheduler enforces itself (and how the backend ends the others), which kinds
the watch cache follows, what its virtual clusters are made of, and why a job waits. The
backend holds no flavor logic: a new flavor is a subclass here plus its tests."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

from ....errors import FieldError, SpecError
from ....spec.protocol import JobProtocol
from ....spec.render import public_spec
from ...completion_policy import Decision
from ...gputypes import GpuTypeCapacity
from ...models import GpuTypeUsage, JobSummary, Resources, VirtualCluster
from .. import vc_usage
from ..gpu_placement import typed_reason
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
from ..pods import (
    Manifest,
    PodOptions,
    default_peer_host,
    headless_service,
    pod_template,
    secret_manifest,
)
from ..resources import CONFIG_MAP, Kind
from ..states import Ending, waiting_reason

#: Every watched object of one kind (the backend's watch cache, read only).
ObjectsOf = Callable[[Kind], list[Manifest]]


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
    """One API call of a stop: ``create`` a manifest, ``patch`` an object,
    ``patch_owned`` (every watched object of ``kind`` owned by the object ``name``), or
    ``delete_pods`` (the job's pods, by label) or ``delete_running_pods`` (those of them
    that have not ended)."""

    op: str
    kind: Kind | None = None
    name: str | None = None
    body: Manifest = field(default_factory=dict)


@dataclass(frozen=True)
class FlavorSettings:
    """A flavor's configuration beyond the pods' options (the backend's traitlets); a
    flavor with settings subclasses it, with defaults."""


@dataclass(frozen=True)
class Waiting:
    """What a WAITING job's reason is read from: its VC's use, the events of its objects,
    its objects of ``extra_kinds`` / ``foreign_kinds`` (``related``), and every VC by name
    (``peers``, for a reason that names another: who reclaimed its GPUs)."""

    job: JobProtocol
    vc: VirtualCluster | None
    events: Sequence[Manifest]
    related: Mapping[Kind, list[Manifest]]
    peers: Mapping[str, VirtualCluster]


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
    #: Namespaced kinds of the job's own objects besides the primary and pods, watched by
    #: our managed-by label (the primary kind, pods and events are always watched).
    extra_kinds: ClassVar[tuple[Kind, ...]] = ()
    #: Namespaced kinds others make that say how a job is scheduled (a controller's pod
    #: group, an admin's quota), watched unfiltered; a job's are those labelled with it or
    #: owned by its primary.
    foreign_kinds: ClassVar[tuple[Kind, ...]] = ()
    #: Cluster-scoped kinds the virtual clusters are made of, watched unfiltered.
    cluster_kinds: ClassVar[tuple[Kind, ...]] = ()
    #: The kind (of ``extra_kinds`` or ``foreign_kinds``) whose ``Unschedulable``
    #: condition says why a gang waits.
    pod_group_kind: ClassVar[Kind | None] = None
    #: Pod annotation carrying the instance index, for per-role templates.
    index_annotation: ClassVar[str | None] = None
    #: The kind (of ``extra_kinds`` or ``foreign_kinds``) that says a job is being
    #: evicted before its pods are deleted (``evicted_at``); None where the deletion itself
    #: is the first sign.
    eviction_kind: ClassVar[Kind | None] = None

    #: The type of :attr:`settings`.
    settings_type: ClassVar[type[FlavorSettings]] = FlavorSettings

    def __init__(self, options: PodOptions, settings: FlavorSettings | None = None) -> None:
        if settings is None:
            settings = self.settings_type()
        if not isinstance(settings, self.settings_type):
            raise TypeError(f"the {self.name} flavor takes {self.settings_type.__name__}")
        self.options = options
        self.settings = settings
        #: The cluster's GPU types' use now, by name (set by the backend where the flavor
        #: places types on nodes): what a typed job's waiting reason counts.
        self.gpu_usage: Callable[[], Mapping[str, GpuTypeUsage]] | None = None
        #: The watched objects of :attr:`cluster_kinds` (set by the backend): what a build
        #: reads where the scheduler's own objects decide a field (Volcano's type queues).
        self.cluster_objects: ObjectsOf | None = None

    @property
    def own_kinds(self) -> tuple[Kind, ...]:
        """The kinds the flavor names besides Kubernetes' core ones."""
        return (self.primary_kind, *self.extra_kinds, *self.foreign_kinds, *self.cluster_kinds)

    def evicted_at(self, obj: Manifest) -> str | None:
        """When the scheduler decided to take the pods of ``obj``'s job away while the job
        goes on (an RFC 3339 time, so their logs are worth following now), if it did;
        ``obj`` is of ``eviction_kind``."""
        return None

    def pod_evicted(self, pod: Manifest) -> bool:
        """Whether the scheduler marked ``pod`` evicted, a moment before deleting it."""
        return False

    def peer_host(self, names: JobNames, role: str, index: int) -> str:
        return default_peer_host(names, role, index)

    def pod_gpus(self, pod: Manifest) -> int | None:
        """The GPUs ``pod`` holds where the scheduler, not the device plugin, gives them;
        None: what its containers request."""
        return None

    async def refresh(self) -> None:
        """Re-read what the scheduler keeps outside the API server (HiveD's cells), before
        virtual clusters are listed or a job checked. The only hook that may do I/O; the
        API server's objects need none, they come from the watch cache."""

    def build(self, job: JobProtocol, names: JobNames) -> Built:
        raise NotImplementedError

    def build_typed(
        self, job: JobProtocol, names: JobNames, gpu_types: dict[str, GpuTypeCapacity] | None
    ) -> Built:
        """:meth:`build` with the cluster's GPU types in the pods' options, so that typed
        roles are placed (synchronous: no other build sees them)."""
        if gpu_types is None:
            return self.build(job, names)
        kept = self.options
        self.options = replace(kept, gpu_types=gpu_types)
        try:
            return self.build(job, names)
        finally:
            self.options = kept

    def pod_template(self, job: JobProtocol, names: JobNames, role: str, **kw: Any) -> Manifest:
        """:func:`.pods.pod_template` with this flavor's options, peer names and index
        annotation."""
        return pod_template(
            job,
            names,
            self.options,
            role,
            index_annotation=self.index_annotation,
            peer_host=self.peer_host,
            **kw,
        )

    def stop_steps(self, primary: Manifest, names: JobNames) -> list[StopStep]:
        """Default: delete the pods (what remains is listed as STOPPED)."""
        return [StopStep("delete_pods")]

    # -- what the scheduler's own object says ---------------------------------------------

    def ended(self, primary: Manifest) -> Ending | None:
        """Whether the scheduler ends the job by its own account (its primary object's
        phase or conditions), and how; None while the job goes on. Default: the primary
        is no scheduler's (a ConfigMap), so never."""
        return None

    def phase(self, primary: Manifest) -> str | None:
        """The scheduler's phase of the job, its sub-state where nothing decided says more."""
        return None

    def restarts(self, primary: Manifest) -> int:
        """How often the scheduler has restarted the whole job."""
        return 0

    # -- the completion policy -------------------------------------------------------------

    def ends_itself(self, job: JobProtocol, decision: Decision) -> bool:
        """Whether the scheduler acts on this decision of OpenPAI's completion policy by
        itself, from what :meth:`build` wrote into the job's objects, with no jupyter-pai
        process running. Default: no; a running backend ends the job (:meth:`ending_steps`)."""
        return False

    def ending_steps(
        self, primary: Manifest, names: JobNames, decision: Decision
    ) -> list[StopStep]:
        """The calls that end a job the policy decided while pods still run (its outcome is
        recorded on the primary first). Default: the stop's."""
        return self.stop_steps(primary, names)

    def missed_event(
        self, primary: Manifest, related: Mapping[Kind, list[Manifest]], pods: int
    ) -> bool:
        """Whether the scheduler's controller has evidently missed an event of this job
        (its objects say it should have acted and it has not), so that :meth:`resync_steps`
        should prompt it. Default: never."""
        return False

    def resync_steps(self, primary: Manifest, names: JobNames) -> list[StopStep]:
        """The calls that prompt the controller to look at the job again."""
        return []

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

    # -- virtual clusters ------------------------------------------------------------------

    def virtual_clusters(
        self, objects: ObjectsOf, jobs: list[JobSummary], cluster: Resources | None
    ) -> list[VirtualCluster] | None:
        """The virtual clusters the scheduler defines, with ``jobs`` counted in them.
        ``cluster`` is the nodes' total, None where only caps matter (waiting reasons,
        submission checks). None: the scheduler has no listing, so any name is accepted."""
        return None

    def check_virtual_cluster(
        self, job: JobProtocol, known: Mapping[str, VirtualCluster] | None
    ) -> None:
        """Refuse a job its virtual cluster does not exist for or can never hold at once
        (``known`` from :meth:`virtual_clusters` with no cluster size)."""
        if known is None:
            return
        vc = job.virtual_cluster
        if vc not in known:
            choices = ", ".join(sorted(known)) or "none"
            raise SpecError(
                [
                    FieldError(
                        "defaults.virtualCluster",
                        f"no virtual cluster {vc!r}; choose one of {choices}",
                    )
                ]
            )
        cap = known[vc].capacity.gpu
        if cap < vc_usage.UNLIMITED.gpu and job.total_gpus > cap:
            role = next(r for r, s in job.task_roles.items() if s.resource_per_instance.gpu > 0)
            raise SpecError(
                [
                    FieldError(
                        f"taskRoles.{role}.resourcePerInstance.gpu",
                        f"the job needs {job.total_gpus} GPUs at once but virtual cluster {vc} has "
                        f"{cap}; ask for fewer GPUs or instances, or use another virtual cluster",
                    )
                ]
            )

    # -- why a job waits -------------------------------------------------------------------

    def waiting_reason(
        self,
        job: JobProtocol,
        *,
        vc: VirtualCluster | None,
        events: Sequence[Manifest],
        related: Mapping[Kind, list[Manifest]],
        peers: Mapping[str, VirtualCluster] | None = None,
    ) -> str:
        """Why a WAITING job waits (:class:`Waiting` says from what); a reason about nodes
        names the job's GPU type and its free GPUs, where it names one."""
        reason = self.why_waiting(Waiting(job, vc, events, related, peers or {}))
        return typed_reason(job, reason, self.gpu_usage)

    def why_waiting(self, w: Waiting) -> str:
        """What :meth:`waiting_reason` answers; a flavor puts its scheduler's own reasons
        first. Default: the VC's use, quota events, the nodes, and the pod group's
        ``Unschedulable`` condition (:func:`.states.waiting_reason`)."""
        groups = w.related.get(self.pod_group_kind, []) if self.pod_group_kind else []
        return waiting_reason(
            w.job,
            vc=vc_usage.usage(w.vc),
            events=w.events,
            pod_group=groups[0] if groups else None,
            gpu_resource=self.options.gpu_resource,
        )


def config_map_primary(job: JobProtocol, names: JobNames, flavor: str) -> Manifest:
    """For flavors with no single workload object: a ConfigMap stands for the job."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": primary_metadata(job, names, flavor),
        "data": {"jobId": names.job_id},
    }


def companions(
    job: JobProtocol, names: JobNames, labels: dict[str, str], *, service: bool = True
) -> list[Manifest]:
    """The job's Secret (where its spec has secrets) and, unless the workload's controller
    makes one, the headless Service its pods' host names live in."""
    out = [m for m in (secret_manifest(job, names, labels),) if m is not None]
    if service:
        out.append(headless_service(names, labels))
    return out
