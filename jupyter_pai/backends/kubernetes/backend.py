"""The distributed engine: jobs as Kubernetes objects of one flavour (Volcano by default),
read back through a shared watch cache so listing jobs costs no API-server request."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from traitlets import Dict, Float, Int, List, Unicode, default

from ... import __version__
from ...errors import BadRequest, Conflict, FieldError, Forbidden, NotFound, SpecError, Unavailable
from ...spec.protocol import JobProtocol
from ...spec.render import MIN_SEARCHED_SECRET, public_spec
from .. import storage_fs
from ..base import Backend, FileContent, LogQuery, LogStream
from ..models import (
    Info,
    JobDetail,
    JobEvent,
    JobFilter,
    JobState,
    JobSummary,
    Resources,
    Storage,
    StorageListing,
    TaskStatus,
    VirtualCluster,
)
from . import connect, vcs
from .flavors import FLAVORS, Flavor
from .jobssh import add_job_key, generate_key_pair, needs_job_key
from .logs import pod_log, ranged_pod_log
from .naming import (
    ANN_JOB_ID,
    ANN_OUTCOME,
    ANN_SPEC,
    ANN_STOP,
    LABEL_JOB,
    LABEL_MANAGED_BY,
    LABEL_PRIMARY,
    MANAGED_BY,
    JobNames,
    make_names,
)
from .pods import PodOptions
from .resources import (
    EVENT,
    NODE,
    POD,
    PRIORITY_CLASS,
    PVC,
    RESOURCE_QUOTA,
    SECRET,
    VOLCANO_POD_GROUP,
    VOLCANO_QUEUE,
    kind_of,
)
from .rest import ApiError, Obj, Rest, path, typed
from .states import JobView, Task, job_view, waiting_reason
from .storage import HelperPods
from .watch import Reflector, WatchCache

OWNED = f"{LABEL_MANAGED_BY}={MANAGED_BY}"
MOUNT_PATH_ANNOTATION = "jupyter-pai.io/mount-path"


@dataclass
class _Derived:
    rv: Any  # the primary's resourceVersion the spec was parsed from
    key: tuple[Any, ...]
    waiting: bool
    job: JobProtocol
    names: JobNames
    view: JobView
    summary: JobSummary


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class KubernetesBackend(Backend):
    """Jobs of one namespace, as the credentials it is given allow."""

    name = "kubernetes"

    namespace = Unicode(
        help="""Namespace of the jobs. Default: $JUPYTER_PAI_NAMESPACE, else the kubeconfig
        context's namespace, else the in-cluster service account's, else ``default``.""",
    ).tag(config=True)

    @default("namespace")
    def _default_namespace(self) -> str:
        return connect.default_namespace(self.kubeconfig or None, self.context or None)

    flavor = Unicode(
        help="""How jobs become objects: ``volcano`` (default), ``kueue``, ``hived``, or
        ``native`` (Kubernetes' own gang PodGroups with batch Jobs; a virtual cluster is a
        PriorityClass ``vc-<name>``). Default: $JUPYTER_PAI_FLAVOR.""",
    ).tag(config=True)

    @default("flavor")
    def _default_flavor(self) -> str:
        return os.environ.get("JUPYTER_PAI_FLAVOR") or "volcano"

    kubeconfig = Unicode(
        "", help="Kubeconfig file; default $KUBECONFIG or ~/.kube/config, else in-cluster."
    ).tag(config=True)
    context = Unicode("", help="Kubeconfig context; default its current context.").tag(config=True)
    default_image = Unicode(
        "python:3.11-slim", help="Image of task roles whose spec names none."
    ).tag(config=True)
    node_selector = Dict(
        help="""Node selector of every job pod, e.g. ``{"gpu-pool": "a100"}``."""
    ).tag(config=True)
    gpu_resource = Unicode("nvidia.com/gpu", help="The extended resource GPUs are.").tag(
        config=True
    )
    vc_priority_prefix = Unicode(
        "vc-", help="native flavour: PriorityClass name = prefix + virtual cluster."
    ).tag(config=True)
    allowed_virtual_clusters = List(
        Unicode(),
        help="""Virtual clusters users of this server may submit to; empty: all the cluster
        offers. Example: ``["default", "research"]``.""",
    ).tag(config=True)
    storage_label_selector = Unicode(
        "",
        help="""Only persistent volume claims with these labels are storages
        (e.g. ``jupyter-pai.io/storage=true``); empty: every claim in the namespace.""",
    ).tag(config=True)
    storage_local_paths = Dict(
        help="""Claims this Jupyter server has mounted: ``{claim: local path}``; these are
        browsed directly, the others through a short-lived read-only helper pod.""",
    ).tag(config=True)
    storage_helper_image = Unicode(
        "python:3.11-slim", help="Image of the storage helper pod (needs python3)."
    ).tag(config=True)
    storage_helper_idle = Float(
        60.0,
        help="""Seconds a storage helper pod waits for the next request before it is
        deleted (it is reused meanwhile; all are deleted when the server stops).""",
    ).tag(config=True)
    sync_timeout = Float(10.0, help="Seconds to wait for the first list of each kind.").tag(
        config=True
    )
    request_timeout = Float(15.0, help="Seconds per API-server request.").tag(config=True)
    master_port = Int(29500, help="MASTER_PORT of torch.distributed.").tag(config=True)

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if self.flavor not in FLAVORS:
            raise ValueError(
                f"KubernetesBackend.flavor is {self.flavor!r}; choose one of {', '.join(FLAVORS)}"
            )
        self.options = PodOptions(
            namespace=self.namespace,
            default_image=self.default_image,
            node_selector=dict(self.node_selector),
            gpu_resource=self.gpu_resource,
            master_port=self.master_port,
        )
        self.engine: Flavor = FLAVORS[self.flavor](
            self.options, priority_prefix=self.vc_priority_prefix
        )
        self.cache = WatchCache()
        self.rest: Rest | None = None
        self._api: Any = None
        self._enforcing: set[str] = set()
        # What is derived from a job's objects (spec, state, summary), by primary uid; valid
        # while the key `_derived_key` computes from the watch cache holds.
        self._derived: dict[str, _Derived] = {}
        self.helpers: HelperPods | None = None

    # -- life cycle ----------------------------------------------------------------------

    async def start(self) -> None:
        self._api = await connect.api_client(self.kubeconfig or None, self.context or None)
        self.rest = Rest(self._api, timeout=self.request_timeout)
        ns = self.namespace
        primary = self.engine.primary_kind
        self.cache.add(
            "primary",
            Reflector(
                self.rest,
                primary,
                ns,
                label_selector=f"{OWNED},{LABEL_PRIMARY}=true",
                index=lambda o: [o["metadata"].get("annotations", {}).get(ANN_JOB_ID, "")],
            ),
        )
        self.cache.add(
            "pods",
            Reflector(
                self.rest,
                POD,
                ns,
                label_selector=OWNED,
                index=lambda o: [o["metadata"].get("labels", {}).get(LABEL_JOB, "")],
            ),
        )
        self.cache.add(
            "events",
            Reflector(
                self.rest,
                EVENT,
                ns,
                index=lambda o: [(o.get("involvedObject") or {}).get("name", "")],
            ),
        )
        for kind in self.engine.extra_kinds:
            selector = None if kind in (RESOURCE_QUOTA, VOLCANO_POD_GROUP) else OWNED
            self.cache.add(
                kind.plural if kind.plural not in self.cache.reflectors else kind.kind,
                Reflector(
                    self.rest,
                    kind,
                    ns,
                    label_selector=selector,
                    index=lambda o: [
                        o["metadata"].get("labels", {}).get(LABEL_JOB, ""),
                        *(r.get("name", "") for r in o["metadata"].get("ownerReferences") or []),
                    ],
                ),
            )
        if self.flavor == "volcano":
            self.cache.add("queues", Reflector(self.rest, VOLCANO_QUEUE, None))
        if self.flavor == "native":
            self.cache.add("priorityclasses", Reflector(self.rest, PRIORITY_CLASS, None))
        self.cache.add(
            "claims",
            Reflector(self.rest, PVC, ns, label_selector=self.storage_label_selector or None),
        )
        self.cache.start()
        self.helpers = HelperPods(
            self.rest, ns, self.storage_helper_image, self.options, idle=self.storage_helper_idle
        )
        if not await self.cache.wait_synced(self.sync_timeout):
            self.log.warning("jupyter-pai: the watch cache is not synced yet; answering 503")

    async def close(self) -> None:
        if self.helpers is not None:
            await self.helpers.close()  # no helper pod outlives the server
        await self.cache.stop()
        if self._api is not None:
            await self._api.close()
            self._api = None

    def _rest(self) -> Rest:
        if self.rest is None:
            raise Unavailable("the Kubernetes backend is not started")
        return self.rest

    # -- reading from the cache ----------------------------------------------------------

    async def info(self) -> Info:
        return Info(
            backend=self.name,
            flavor=self.flavor,
            version=__version__,
            user=self.user,
            namespace=self.namespace,
        )

    def _primary(self, job_id: str) -> Obj:
        self.cache.check()
        found = self.cache["primary"].by_index(job_id)
        if not found:
            raise NotFound(f"no job {job_id!r} in namespace {self.namespace}")
        return found[0]

    @staticmethod
    def _spec(primary: Obj) -> JobProtocol:
        return JobProtocol.model_validate(json.loads(primary["metadata"]["annotations"][ANN_SPEC]))

    def _pods(self, names: JobNames) -> list[tuple[str | None, int | None, Obj]]:
        return [(*self.engine.role_index(p), p) for p in self.cache["pods"].by_index(names.base)]

    def _related_names(self, names: JobNames, primary: Obj) -> set[str]:
        related = {primary["metadata"]["name"], names.base}
        related |= {p["metadata"]["name"] for _, _, p in self._pods(names)}
        related |= {names.role_object(r) for r in names.roles}
        for key in self.cache.reflectors:
            if key in ("primary", "pods", "events", "claims", "queues", "priorityclasses"):
                continue
            for obj in self.cache[key].by_index(names.base) + self.cache[key].by_index(
                primary["metadata"]["name"]
            ):
                related.add(obj["metadata"]["name"])
        return related

    def _events(self, names: JobNames, primary: Obj) -> list[Obj]:
        events: list[Obj] = []
        for name in self._related_names(names, primary):
            events += self.cache["events"].by_index(name)
        return events

    # Reflectors whose objects a waiting reason reads besides the job's own pods.
    _NOT_WAITING_INPUTS = frozenset(("primary", "pods", "claims"))

    def _waiting_inputs(self) -> tuple[int, ...]:
        return tuple(
            r.version for k, r in self.cache.reflectors.items() if k not in self._NOT_WAITING_INPUTS
        )

    def _derived_key(
        self, primary: Obj, names: JobNames, waiting: bool, inputs: tuple[int, ...] | None
    ) -> tuple[Any, ...]:
        """Changes whenever the job's view may: its primary or its pods changed, or, for a
        waiting job, anything its waiting reason reads (events, pod groups, quotas…)."""
        key: tuple[Any, ...] = (
            primary["metadata"].get("resourceVersion"),
            self.cache["pods"].index_version(names.base),
        )
        if waiting:
            key += inputs if inputs is not None else self._waiting_inputs()
        return key

    def _view(self, primary: Obj, inputs: tuple[int, ...] | None = None) -> _Derived:
        meta = primary["metadata"]
        uid = str(meta.get("uid", ""))
        cached = self._derived.get(uid)
        if cached is not None and cached.rv == meta.get("resourceVersion"):
            job, names = cached.job, cached.names
            if cached.key == self._derived_key(primary, names, cached.waiting, inputs):
                self._enforce(primary, names, cached.view)
                return cached
        else:
            job = self._spec(primary)
            names = JobNames.from_annotations(meta["annotations"])
        view = job_view(job, names, primary, self._pods(names))
        if view.state == JobState.WAITING:
            vc = self._vc_map_now().get(job.virtual_cluster)
            group = next(
                (
                    g
                    for k in ("podgroups", "PodGroup")
                    if k in self.cache.reflectors
                    for g in self.cache[k].by_index(names.base)
                    + self.cache[k].by_index(primary["metadata"]["name"])
                ),
                None,
            )
            view.waiting_reason = waiting_reason(
                job,
                vc=vcs.usage(vc),
                events=self._events(names, primary),
                pod_group=group,
                gpu_resource=self.gpu_resource,
            )
        waiting = view.state == JobState.WAITING
        derived = _Derived(
            rv=meta.get("resourceVersion"),
            key=self._derived_key(primary, names, waiting, inputs),
            waiting=waiting,
            job=job,
            names=names,
            view=view,
            summary=self._summary(primary, job, names, view),
        )
        self._derived[uid] = derived
        self._enforce(primary, names, view)
        return derived

    def _summary(
        self, primary: Obj, job: JobProtocol, names: JobNames, view: JobView
    ) -> JobSummary:
        return JobSummary(
            id=names.job_id,
            name=names.name,
            user=names.user,
            state=view.state,
            sub_state=view.sub_state,
            virtual_cluster=job.virtual_cluster,
            retries=view.retries,
            submission_time=primary["metadata"].get("creationTimestamp") or _now(),
            launched_time=view.launched,
            completed_time=view.completed if view.state.terminal else None,
            exit_code=view.exit_code,
            total_gpu_number=job.total_gpus,
            total_task_number=job.total_instances,
            total_task_role_number=len(job.task_roles),
            waiting_reason=view.waiting_reason,
        )

    async def list_jobs(self, query: JobFilter | None = None) -> list[JobSummary]:
        self.cache.check()
        primaries = self.cache["primary"].values()
        jobs = []
        inputs = self._waiting_inputs()
        for primary in primaries:
            try:
                jobs.append(self._view(primary, inputs).summary)
            except (KeyError, ValueError):
                continue  # not one of ours, or written by an incompatible version
        if len(self._derived) > len(primaries):  # forget deleted jobs
            alive = {p["metadata"].get("uid") for p in primaries}
            self._derived = {u: d for u, d in self._derived.items() if u in alive}
        if query is not None:
            jobs = [j for j in jobs if query.matches(j)]
        return sorted(jobs, key=lambda j: j.submission_time, reverse=True)

    async def get_job(self, job_id: str) -> JobDetail:
        primary = self._primary(job_id)
        d = self._view(primary)
        return self._detail(primary, d.job, d.names, d.view)

    def _detail(self, primary: Obj, job: JobProtocol, names: JobNames, view: JobView) -> JobDetail:
        tasks = [
            TaskStatus(
                role=t.role,
                index=t.index,
                state=t.state,
                node=t.node,
                ip=t.ip,
                gpu_number=t.gpus,
                ports=t.ports,
                exit_code=t.exit_code,
                exit_reason=t.exit_reason,
                retries=t.retries,
                started_time=t.started,
                completed_time=t.completed,
            )
            for t in view.tasks
        ]
        summary = self._summary(primary, job, names, view)
        return JobDetail(**summary.model_dump(), spec=public_spec(job), tasks=tasks)

    async def events(self, job_id: str) -> list[JobEvent]:
        primary = self._primary(job_id)
        names = JobNames.from_annotations(primary["metadata"]["annotations"])
        pod_source = {
            p["metadata"]["name"]: f"{role}-{index}"
            for role, index, p in self._pods(names)
            if role is not None
        }
        out = []
        for e in self._events(names, primary):
            when = e.get("lastTimestamp") or e.get("eventTime") or e.get("firstTimestamp")
            if not when:
                when = e["metadata"].get("creationTimestamp")
            obj = (e.get("involvedObject") or {}).get("name", "")
            out.append(
                JobEvent(
                    time=when,
                    type=e.get("type") or "Normal",
                    reason=e.get("reason") or "",
                    message=e.get("message") or "",
                    source=pod_source.get(obj, "job"),
                )
            )
        return sorted(out, key=lambda ev: ev.time)

    # -- virtual clusters ----------------------------------------------------------------

    async def _cluster_total(self) -> Resources:
        try:
            nodes = await self._rest().get(path(NODE, None))
        except (ApiError, Unavailable):
            return Resources()
        return vcs.cluster_total(nodes.get("items") or [], self.gpu_resource)

    async def _vc_map(self) -> dict[str, VirtualCluster]:
        return self._vc_map_now()

    def _vc_map_now(self) -> dict[str, VirtualCluster]:
        """Virtual clusters by name, without jobs' queue counts (used for waiting reasons)."""
        if self.flavor == "volcano":
            return {
                v.name: v
                for v in vcs.volcano(
                    self.cache["queues"].values(), [], Resources(), self.gpu_resource
                )
            }
        if self.flavor == "native":
            return {
                v.name: v
                for v in vcs.native(
                    self.cache["priorityclasses"].values(),
                    self.cache["resourcequotas"].values(),
                    [],
                    vcs.UNLIMITED,
                    self.vc_priority_prefix,
                    self.gpu_resource,
                )
            }
        return {}

    async def virtual_clusters(self) -> list[VirtualCluster]:
        self.cache.check()
        jobs = await self.list_jobs()
        cluster = await self._cluster_total()
        if self.flavor == "volcano":
            found = vcs.volcano(self.cache["queues"].values(), jobs, cluster, self.gpu_resource)
        elif self.flavor == "native":
            found = vcs.native(
                self.cache["priorityclasses"].values(),
                self.cache["resourcequotas"].values(),
                jobs,
                cluster,
                self.vc_priority_prefix,
                self.gpu_resource,
            )
        else:
            names = sorted({j.virtual_cluster for j in jobs} | set(self.allowed_virtual_clusters))
            found = [
                VirtualCluster(name=n, capacity=cluster, used=Resources(), free=cluster)
                for n in names or ["default"]
            ]
        if self.allowed_virtual_clusters:
            found = [v for v in found if v.name in self.allowed_virtual_clusters]
        return found

    # -- submit --------------------------------------------------------------------------

    async def _check_submission(self, job: JobProtocol) -> None:
        vc = job.virtual_cluster
        field = "defaults.virtualCluster"
        if self.allowed_virtual_clusters and vc not in self.allowed_virtual_clusters:
            allowed = ", ".join(self.allowed_virtual_clusters)
            raise SpecError(
                [FieldError(field, f"you may not use virtual cluster {vc!r}; yours: {allowed}")]
            )
        known = await self._vc_map()
        if self.flavor in ("volcano", "native"):
            if vc not in known:
                raise SpecError(
                    [
                        FieldError(
                            field,
                            f"no virtual cluster {vc!r}; choose one of {', '.join(sorted(known)) or 'none'}",
                        )
                    ]
                )
            cap = known[vc].capacity.gpu
            limited = cap < vcs.UNLIMITED.gpu
            if limited and job.total_gpus > cap:
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
        claims = {c["metadata"]["name"] for c in self.cache["claims"].values()}
        for i, mount in enumerate(job.extras.storages):
            if mount.name not in claims:
                raise SpecError(
                    [
                        FieldError(
                            f"extras.storages.{i}.name",
                            f"no storage {mount.name!r}; yours: {', '.join(sorted(claims)) or 'none'}",
                        )
                    ]
                )

    def _suggest(self, names: JobNames) -> str:
        taken = self.cache["primary"]
        n = 2
        while taken.by_index(f"{names.user}~{names.name}-{n}"):
            n += 1
        return f"{names.name}-{n}"

    def _conflict(self, names: JobNames) -> Conflict:
        return Conflict(
            f"job name {names.name!r} is taken; choose another, e.g. {self._suggest(names)!r}",
            [FieldError("name", "is already used by another of your jobs")],
        )

    async def submit(self, job: JobProtocol, *, working_dir: str | None = None) -> JobDetail:
        self.cache.check()
        self.check_runtime_plugins(job)
        await self._check_submission(job)
        names = make_names(job, self.user)
        if self.cache["primary"].by_index(names.job_id):
            raise self._conflict(names)
        built = self.engine.build(job, names)
        if needs_job_key(job):  # made here, so no builder output holds it
            pair = generate_key_pair(f"jupyter-pai job {names.job_id}")
            add_job_key(built.objects, names, pair)
        primary = await self._create_all(built.objects, built.primary, names)
        view = job_view(job, names, primary, [])
        view.waiting_reason = "submitted; waiting for the scheduler"
        return self._detail(primary, job, names, view)

    async def _create_all(self, objects: list[Obj], primary_index: int, names: JobNames) -> Obj:
        """Create in order; the objects before the primary get their owner reference once it
        exists, those after it at creation. Any failure deletes what was created."""
        rest = self._rest()
        ns = self.namespace
        created: list[Obj] = []
        primary: Obj | None = None
        try:
            for i, manifest in enumerate(objects):
                body = json.loads(json.dumps(manifest))
                body["metadata"]["namespace"] = ns
                if primary is not None:
                    body["metadata"]["ownerReferences"] = [_owner(primary)]
                try:
                    obj = await rest.create(kind_of(body), ns, body)
                except ApiError as error:
                    if error.status == 409 and i == primary_index:
                        raise self._conflict(names) from None
                    if error.status == 409:
                        raise Conflict(
                            f"object {body['metadata'].get('name')} of job {names.job_id} already exists; "
                            f"choose another name, e.g. {self._suggest(names)!r}"
                        ) from None
                    raise typed(error) from None
                created.append(obj)
                if i == primary_index:
                    primary = obj
                    for earlier in created[:-1]:
                        await rest.patch(
                            kind_of(earlier),
                            ns,
                            earlier["metadata"]["name"],
                            {"metadata": {"ownerReferences": [_owner(primary)]}},
                        )
        except BaseException:
            for obj in reversed(created):
                with contextlib.suppress(Exception):
                    await rest.delete(kind_of(obj), ns, obj["metadata"]["name"])
            raise
        assert primary is not None
        return primary

    # -- stop and completion -------------------------------------------------------------

    async def stop_job(self, job_id: str) -> JobDetail:
        primary = self._primary(job_id)
        names = JobNames.from_annotations(primary["metadata"]["annotations"])
        if names.user != self.user:
            raise Forbidden(f"job {job_id} belongs to {names.user}; only they may stop it")
        d = self._view(primary)
        job, names, view = d.job, d.names, d.view
        if view.state.terminal or view.state == JobState.STOPPING:
            return self._detail(primary, job, names, view)
        rest = self._rest()
        try:
            primary = await rest.patch(
                self.engine.primary_kind,
                self.namespace,
                primary["metadata"]["name"],
                {"metadata": {"annotations": {ANN_STOP: _now()}}},
            )
            await self._run_stop_steps(primary, names)
        except ApiError as error:
            raise typed(error) from None
        d = self._view(primary)
        job, names, view = d.job, d.names, d.view
        return self._detail(primary, job, names, view)

    async def _run_stop_steps(self, primary: Obj, names: JobNames) -> None:
        rest = self._rest()
        ns = self.namespace
        for step in self.engine.stop_steps(primary, names):
            if step.op == "create" and step.kind is not None:
                await rest.create(
                    step.kind,
                    ns,
                    {**step.body, "metadata": {**step.body["metadata"], "namespace": ns}},
                )
            elif step.op == "patch" and step.kind is not None and step.name:
                with contextlib.suppress(ApiError):
                    await rest.patch(step.kind, ns, step.name, step.body)
            elif step.op == "delete_pods":
                await rest.call(
                    "DELETE",
                    path(POD, ns),
                    query={"labelSelector": f"{OWNED},{LABEL_JOB}={names.base}"},
                )

    def _enforce(self, primary: Obj, names: JobNames, view: JobView) -> None:
        """The completion policy decided while pods still run (a ps after its workers
        succeeded): record the outcome and stop what is left, once, in the background."""
        annotations = primary["metadata"].get("annotations") or {}
        if (
            view.state not in (JobState.SUCCEEDED, JobState.FAILED)
            or not view.active_pods
            or ANN_OUTCOME in annotations
            or names.job_id in self._enforcing
            or self.rest is None
        ):
            return
        self._enforcing.add(names.job_id)
        outcome = {
            "state": view.state.value,
            "reason": view.sub_state,
            "exitCode": view.exit_code,
            "time": _now(),
        }

        async def run() -> None:
            try:
                rest = self._rest()
                await rest.patch(
                    self.engine.primary_kind,
                    self.namespace,
                    primary["metadata"]["name"],
                    {"metadata": {"annotations": {ANN_OUTCOME: json.dumps(outcome)}}},
                )
                await self._run_stop_steps(primary, names)
            except Exception:
                self.log.exception("jupyter-pai: ending job %s failed", names.job_id)
            finally:
                self._enforcing.discard(names.job_id)

        asyncio.get_running_loop().create_task(run())

    # -- logs ----------------------------------------------------------------------------

    async def logs(self, job_id: str, query: LogQuery) -> LogStream:
        primary = self._primary(job_id)
        d = self._view(primary)
        job, names, view = d.job, d.names, d.view
        role = query.role or next(iter(job.task_roles))
        task = next((t for t in view.tasks if t.role == role and t.index == query.index), None)
        if task is None:
            raise NotFound(f"job {job_id} has no task {role}-{query.index}")
        if task.pod is None:

            async def nothing() -> Any:
                return
                yield b""

            return LogStream(size=0, chunks=nothing(), role=role, index=query.index)
        if query.offset is not None and query.offset < 0:
            raise BadRequest("offset must be ≥ 0")
        pod, previous = self._attempt(task, query.attempt, job_id)
        try:
            if (query.offset is not None or query.limit is not None) and query.tail is None:
                size, data = await ranged_pod_log(
                    self._rest(),
                    self.namespace,
                    pod,
                    offset=query.offset or 0,
                    limit=query.limit,
                    previous=previous,
                    secrets=await self._secret_values(job, names),
                )
                return LogStream(size=size, chunks=_once(data), role=role, index=query.index)
            chunks = await pod_log(
                self._rest(),
                self.namespace,
                pod,
                follow=query.follow
                and pod == task.pod
                and not previous
                and not task.state.terminal,
                tail=query.tail,
                previous=previous,
                limit=query.limit,
                secrets=await self._secret_values(job, names),
            )
        except ApiError as error:
            if error.status == 400 and previous:
                raise NotFound(
                    f"Kubernetes no longer keeps attempt {query.attempt} of task {role}-{query.index}"
                ) from None
            if error.status == 400:
                # The container has not started: no log yet.
                async def empty() -> Any:
                    return
                    yield b""

                return LogStream(size=0, chunks=empty(), role=role, index=query.index)
            raise typed(error) from None
        return LogStream(size=0, chunks=chunks, role=role, index=query.index)

    @staticmethod
    def _attempt(task: Task, attempt: int | None, job_id: str) -> tuple[str, bool]:
        """The pod, and whether its previous container, that ran `attempt` of a task.
        Attempts are the failed pods it replaced (a Job's retries), oldest first, then the
        instances of its current pod's container (restarts), of which the kubelet keeps
        the last terminated one."""
        assert task.pod is not None
        if attempt is None or attempt == task.retries:
            return task.pod, False
        where = f"task {task.role}-{task.index} of job {job_id}"
        if attempt < 0 or attempt > task.retries:
            raise NotFound(f"{where} has no attempt {attempt} (attempts 0 to {task.retries})")
        if attempt < len(task.earlier_pods):
            return task.earlier_pods[attempt], False
        if attempt == task.retries - 1:
            return task.pod, True
        raise NotFound(f"Kubernetes no longer keeps attempt {attempt} of {where}")

    async def _secret_values(self, job: JobProtocol, names: JobNames) -> list[str]:
        """The values to blank in logs: the stored spec hides them, the Secret holds them
        (with the job's ssh key pair)."""
        if not job.secrets and not needs_job_key(job):
            return []
        try:
            secret = await self._rest().get(path(SECRET, self.namespace, names.secret))
        except ApiError:
            return []
        values = {
            base64.b64decode(v).decode(errors="replace")
            for v in (secret.get("data") or {}).values()
        }
        return sorted((v for v in values if len(v) >= MIN_SEARCHED_SECRET), key=len, reverse=True)

    # -- storage -------------------------------------------------------------------------

    async def storages(self) -> list[Storage]:
        self.cache.check()
        out = []
        for claim in sorted(self.cache["claims"].values(), key=lambda c: c["metadata"]["name"]):
            meta = claim["metadata"]
            name = meta["name"]
            modes = (claim.get("spec") or {}).get("accessModes") or []
            out.append(
                Storage(
                    name=name,
                    mount_path=(meta.get("annotations") or {}).get(
                        MOUNT_PATH_ANNOTATION, f"/mnt/{name}"
                    ),
                    read_only=modes == ["ReadOnlyMany"],
                    description=f"persistent volume claim {name}",
                )
            )
        return out

    async def read_storage(self, name: str, path_: str) -> StorageListing | FileContent:
        self.cache.check()
        if self.cache["claims"].get(name) is None:
            raise NotFound(f"no storage {name!r}")
        storage_fs.clean_relative(path_)  # refuse traversal before anything runs
        local = self.storage_local_paths.get(name)
        if local:
            return await storage_fs.read_path(name, Path(str(local)), path_)
        assert self.helpers is not None
        return await self.helpers.read(name, path_)


async def _once(data: bytes) -> AsyncIterator[bytes]:
    if data:
        yield data


def _owner(obj: Obj) -> dict[str, Any]:
    return {
        "apiVersion": obj["apiVersion"],
        "kind": obj["kind"],
        "name": obj["metadata"]["name"],
        "uid": obj["metadata"]["uid"],
        "blockOwnerDeletion": False,
    }
