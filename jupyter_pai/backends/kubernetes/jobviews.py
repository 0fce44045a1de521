"""Jobs as the API shows them, read from the shared watch cache: which reflectors a flavor
needs, and what is derived from a job's objects (spec, state, waiting reason, summary),
memoised per job so that listing jobs costs no API-server request and little CPU."""

from __future__ import annotations

import contextlib
import functools
import json
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ...errors import NotFound
from ...spec.protocol import JobProtocol
from ...spec.render import public_spec
from ..models import (
    JobDetail,
    JobEvent,
    JobFilter,
    JobState,
    JobSummary,
    Resources,
    TaskStatus,
    VirtualCluster,
)
from . import nodeloss
from .flavors import Flavor
from .naming import (
    ANN_JOB_ID,
    ANN_SPEC,
    LABEL_ARCHIVED,
    LABEL_INDEX,
    LABEL_JOB,
    LABEL_MANAGED_BY,
    LABEL_PRIMARY,
    LABEL_ROLE,
    MANAGED_BY,
    JobNames,
)
from .resources import CONFIG_MAP, EVENT, POD, PVC, Kind
from .rest import Obj, Rest
from .states import JobView, job_view, now, parse_time
from .watch import Reflector, WatchCache, slim_event

OWNED = f"{LABEL_MANAGED_BY}={MANAGED_BY}"

#: Called with every view computed or reused (the completion policy acts on it).
#: Told of every view derived; the spec is a getter: an ended job's is parsed only if read.
ViewHook = Callable[[Obj, Callable[[], JobProtocol], JobNames, JobView], None]


#: Derives a job's view from its primary, its spec and names (``JobViews._make_view``).
ViewMaker = Callable[[Obj, JobProtocol, JobNames], JobView]


@dataclass(slots=True)
class Derived:
    key: tuple[Any, ...]
    waiting: bool
    parsed: JobProtocol | None  # kept while the job may change; an ended job's is parsed again
    summary: JobSummary
    base: str  # the job's base name (its pods' label), as `JobViews._key` reads it
    primary: Obj  # the object it was derived from (its resourceVersion, its spec's text)
    # Names and view while the job may change. An ended job's are derived again when read
    # (its detail, its logs), as its spec is: at 5,000 ended jobs they were 4 MB, and a list
    # reads only the summary.
    kept: tuple[JobNames, JobView] | None
    make_view: ViewMaker

    @property
    def rv(self) -> Any:
        return self.primary["metadata"].get("resourceVersion")

    @property
    def job(self) -> JobProtocol:
        if self.parsed is not None:
            return self.parsed
        return parse_spec(self.primary["metadata"]["annotations"][ANN_SPEC])

    @property
    def names(self) -> JobNames:
        if self.kept is not None:
            return self.kept[0]
        return JobNames.from_annotations(self.primary["metadata"]["annotations"])

    @property
    def view(self) -> JobView:
        return self.parts()[2]

    def parts(self) -> tuple[JobProtocol, JobNames, JobView]:
        """The job's spec, names and view, each derived once."""
        job = self.job
        if self.kept is not None:
            return job, *self.kept
        names = self.names
        return job, names, self.make_view(self.primary, job, names)


#: Parsed specs of ended jobs, the latest read: at 50,000 jobs every spec kept parsed
#: would be most of the server's memory, and an ended job's is read only when asked for.
ENDED_SPECS_KEPT = 256
#: Kinds whose events no view reads: a job's Service and its endpoints say the same things
#: over and over (e.g. FailedToUpdateEndpoint while pods come and go), half of the events.
UNREAD_EVENT_KINDS = frozenset(("Service", "Endpoints", "EndpointSlice"))
#: Deleted objects remembered, so an event about one that comes after it is not kept.
GONE_KEPT = 20_000


@functools.lru_cache(maxsize=ENDED_SPECS_KEPT)
def parse_spec(text: str) -> JobProtocol:
    return JobProtocol.model_validate(json.loads(text))


def labels_and_owners(obj: Obj) -> list[str]:
    """The jobs an object belongs to: its job label, and the names of its owners."""
    meta = obj["metadata"]
    return [
        meta.get("labels", {}).get(LABEL_JOB, ""),
        *(r.get("name", "") for r in meta.get("ownerReferences") or []),
    ]


class JobViews:
    """The watch cache of one namespace's jobs, and their views derived from it."""

    # Reflectors a waiting reason does not read (the job's own pods are in its key anyway).
    _NOT_WAITING_INPUTS = frozenset(("primary", "pods", "claims", "archives"))

    def __init__(self, flavor: Flavor, namespace: str) -> None:
        self.flavor = flavor
        self.namespace = namespace
        self.cache = WatchCache()
        self.on_view: ViewHook | None = None
        # Reflector name of each kind the flavor asked for.
        self._kinds: dict[Kind, str] = {}
        # By primary uid; valid while the key `_key` computes from the cache holds.
        self._derived: dict[str, Derived] = {}
        # Every job's summary, newest first, as of the cache's counters: every open panel
        # lists after the same change, and a pass over 5,000 jobs is ~0.1 s of the loop.
        self._listed: tuple[tuple[tuple[int, int], ...], list[JobSummary]] | None = None
        # Uids of objects deleted lately, whose events arriving late are not kept.
        self._gone: OrderedDict[str, None] = OrderedDict()
        # One bound method shared by every Derived (each its own would be 48 bytes a job).
        self._view_maker: ViewMaker = self._make_view

    # -- wiring ----------------------------------------------------------------------------

    def watch(self, rest: Rest, *, claims_selector: str | None) -> None:
        """Add the reflectors: primaries, pods, events, the flavor's kinds, then claims."""
        ns, flavor = self.namespace, self.flavor
        self.cache.add(
            "primary",
            Reflector(
                rest,
                flavor.primary_kind,
                ns,
                label_selector=f"{OWNED},{LABEL_PRIMARY}=true",
                index=lambda o: [o["metadata"].get("annotations", {}).get(ANN_JOB_ID, "")],
            ),
        )
        self.cache.add(
            "pods",
            Reflector(
                rest,
                POD,
                ns,
                label_selector=OWNED,
                index=lambda o: [o["metadata"].get("labels", {}).get(LABEL_JOB, "")],
            ),
        )
        self.cache.add(
            "events",
            Reflector(
                rest,
                EVENT,
                ns,
                index=lambda o: [(o.get("involvedObject") or {}).get("name", "")],
                slim=slim_event,
                keep=self._event_kept,
            ),
        )
        for kind in flavor.extra_kinds:
            self._add(
                kind, Reflector(rest, kind, ns, label_selector=OWNED, index=labels_and_owners)
            )
        for kind in flavor.foreign_kinds:
            self._add(kind, Reflector(rest, kind, ns, index=labels_and_owners))
        for kind in flavor.cluster_kinds:
            self._add(kind, Reflector(rest, kind, None))
        self.cache.add("claims", Reflector(rest, PVC, ns, label_selector=claims_selector))
        self.cache.add(
            "archives",
            Reflector(
                rest,
                CONFIG_MAP,
                ns,
                label_selector=f"{OWNED},{LABEL_ARCHIVED}=true",
                index=lambda o: [o["metadata"].get("labels", {}).get(LABEL_JOB, "")],
            ),
        )
        for name, reflector in self.cache.reflectors.items():
            if name != "events":
                reflector.listeners.append(functools.partial(self._forget_if_gone, reflector))

    def _event_kept(self, event: Obj) -> bool:
        about = event.get("involvedObject") or {}
        return about.get("kind") not in UNREAD_EVENT_KINDS and about.get("uid") not in self._gone

    def _forget_if_gone(self, reflector: Reflector, obj: Obj) -> None:
        """A job deleted takes the events about its objects with it: Kubernetes keeps a
        namespace's events an hour, and a busy namespace's would otherwise fill the cache.
        An object deleted while its job lives (a pod replaced) keeps its events."""
        meta = obj.get("metadata") or {}
        uid = meta.get("uid")
        if not uid or reflector.get(meta.get("name", ""), meta.get("namespace")) is not None:
            return
        events = self.cache["events"]
        if reflector is self.cache["primary"]:
            # Its unwatched objects too (its Service, its per-role objects), by name.
            with contextlib.suppress(KeyError, ValueError):
                names = JobNames.from_annotations(meta.get("annotations") or {})
                for name in {names.base, *(names.role_object(r) for r in names.roles)}:
                    events.drop(name, lambda e: True)
        elif self._job_lives(obj):
            return
        self._gone[uid] = None
        while len(self._gone) > GONE_KEPT:
            self._gone.popitem(last=False)
        events.drop(
            meta.get("name", ""), lambda e: (e.get("involvedObject") or {}).get("uid") == uid
        )

    def _job_lives(self, obj: Obj) -> bool:
        """Whether the job an object belongs to (its job label or owner) still exists."""
        ours = {name for name in labels_and_owners(obj) if name}
        return any(
            p["metadata"]["name"] in ours or p["metadata"].get("labels", {}).get(LABEL_JOB) in ours
            for p in self.cache["primary"].values()
        )

    def _add(self, kind: Kind, reflector: Reflector) -> None:
        name = kind.plural if kind.plural not in self.cache.reflectors else kind.kind
        self._kinds[kind] = name
        self.cache.add(name, reflector)

    def reflector(self, kind: Kind) -> Reflector:
        """The watch of one of the flavor's kinds."""
        return self.cache[self._kinds[kind]]

    def objects(self, kind: Kind) -> list[Obj]:
        """Every watched object of one of the flavor's kinds."""
        return self.reflector(kind).values()

    # -- one job ---------------------------------------------------------------------------

    def primary(self, job_id: str) -> Obj:
        self.cache.check()
        found = self.cache["primary"].by_index(job_id)
        if not found:
            raise NotFound(f"no job {job_id!r} in namespace {self.namespace}")
        return found[0]

    def taken(self, job_id: str) -> bool:
        return bool(self.cache["primary"].by_index(job_id))

    def claims(self) -> set[str]:
        return {c["metadata"]["name"] for c in self.cache["claims"].values()}

    def pods(self, names: JobNames) -> list[tuple[str | None, int | None, Obj]]:
        return [(*self.flavor.role_index(p), p) for p in self.cache["pods"].by_index(names.base)]

    def archives(self, names: JobNames) -> list[tuple[str | None, int | None, Obj]]:
        """The kept logs of the job's evicted attempts, by (role slug, index) as labelled."""
        out: list[tuple[str | None, int | None, Obj]] = []
        for archive in self.cache["archives"].by_index(names.base):
            labels = archive["metadata"].get("labels") or {}
            index = labels.get(LABEL_INDEX, "")
            out.append((labels.get(LABEL_ROLE), int(index) if index.isdigit() else None, archive))
        return out

    def related(self, names: JobNames, primary: Obj) -> dict[Kind, list[Obj]]:
        """The job's objects of the flavor's namespaced kinds: labelled with it or owned."""
        out = {}
        for kind in (*self.flavor.extra_kinds, *self.flavor.foreign_kinds):
            reflector = self.cache[self._kinds[kind]]
            out[kind] = reflector.by_index(names.base) + reflector.by_index(
                primary["metadata"]["name"]
            )
        return out

    def owned(self, kind: Kind, owner: str) -> list[Obj]:
        """The watched objects of one of the flavor's namespaced kinds owned by (or
        labelled with) ``owner``."""
        return list(self.cache[self._kinds[kind]].by_index(owner))

    def _events(self, names: JobNames, primary: Obj, related: dict[Kind, list[Obj]]) -> list[Obj]:
        about = {primary["metadata"]["name"], names.base}
        about |= {p["metadata"]["name"] for _, _, p in self.pods(names)}
        about |= {names.role_object(r) for r in names.roles}
        about |= {o["metadata"]["name"] for objs in related.values() for o in objs}
        created = primary["metadata"].get("creationTimestamp")
        events: list[Obj] = []
        for name in about:
            events += events_since(self.cache["events"].by_index(name), created)
        return events

    def events(self, job_id: str) -> list[JobEvent]:
        primary = self.primary(job_id)
        names = JobNames.from_annotations(primary["metadata"]["annotations"])
        pod_source = {
            p["metadata"]["name"]: f"{role}-{index}"
            for role, index, p in self.pods(names)
            if role is not None
        }
        out = []
        for e in self._events(names, primary, self.related(names, primary)):
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
        out += nodeloss.events(primary)
        return sorted(out, key=lambda ev: ev.time)

    # -- derived views ---------------------------------------------------------------------

    def _waiting_inputs(self) -> tuple[int, ...]:
        return tuple(
            r.version for k, r in self.cache.reflectors.items() if k not in self._NOT_WAITING_INPUTS
        )

    def _key(
        self, primary: Obj, base: str, waiting: bool, inputs: tuple[int, ...] | None
    ) -> tuple[Any, ...]:
        """Changes whenever the job's view may: its primary or its pods changed, or, for a
        waiting job, anything its waiting reason reads (events, pod groups, quotas…)."""
        key: tuple[Any, ...] = (
            primary["metadata"].get("resourceVersion"),
            self.cache["pods"].index_version(base),
            self.cache["archives"].index_version(base),
        )
        if waiting:
            key += inputs if inputs is not None else self._waiting_inputs()
        return key

    def view(self, primary: Obj, inputs: tuple[int, ...] | None = None) -> Derived:
        meta = primary["metadata"]
        uid = str(meta.get("uid", ""))
        cached = self._derived.get(uid)
        if cached is not None and cached.rv == meta.get("resourceVersion"):
            if cached.key == self._key(primary, cached.base, cached.waiting, inputs):
                if cached.kept is not None:  # an ended job's hooks have nothing left to do
                    names, view = cached.kept
                    self._notify(primary, lambda: cached.job, names, view)
                return cached
            job, names = cached.job, cached.names
        else:
            job = JobProtocol.model_validate(json.loads(meta["annotations"][ANN_SPEC]))
            names = JobNames.from_annotations(meta["annotations"])
        view = self._make_view(primary, job, names)
        waiting = view.state == JobState.WAITING
        ended = view.state.terminal and not view.active_pods
        label = (meta.get("labels") or {}).get(LABEL_JOB)
        base = label if label == names.base else names.base  # the label's text: no copy
        derived = Derived(
            key=self._key(primary, base, waiting, inputs),
            waiting=waiting,
            parsed=None if view.state.terminal else job,
            summary=summary(primary, job, names, view),
            base=base,
            primary=primary,
            kept=None if ended else (names, view),
            make_view=self._view_maker,
        )
        self._derived[uid] = derived
        self._notify(primary, lambda: job, names, view)
        return derived

    def _make_view(self, primary: Obj, job: JobProtocol, names: JobNames) -> JobView:
        view = job_view(
            job,
            names,
            primary,
            self.pods(names),
            archives=self.archives(names),
            flavor=self.flavor,
        )
        if view.state == JobState.WAITING:
            related = self.related(names, primary)
            caps = self.virtual_cluster_caps() or {}
            view.waiting_reason = self.flavor.waiting_reason(
                job,
                vc=caps.get(job.virtual_cluster),
                events=self._events(names, primary, related),
                related=related,
                peers=caps,
            )
        lost = nodeloss.summary(primary)
        if lost and view.state == JobState.WAITING:
            view.waiting_reason = f"{lost}; {view.waiting_reason}"
        elif lost and view.state == JobState.FAILED:
            view.sub_state = f"{view.sub_state}: {lost}" if view.sub_state else lost
        return view

    def _notify(
        self, primary: Obj, job: Callable[[], JobProtocol], names: JobNames, view: JobView
    ) -> None:
        if self.on_view is not None:
            self.on_view(primary, job, names, view)

    def detail(self, job_id: str) -> JobDetail:
        primary = self.primary(job_id)
        return detail(primary, *self.view(primary).parts())

    def summaries(self, query: JobFilter | None = None) -> list[JobSummary]:
        self.cache.check()
        counters = self.cache.counters()
        if self._listed is None or self._listed[0] != counters:
            # Nothing a view reads changed since the last pass: its views (and the hooks
            # they ran) stand.
            self._listed = (counters, self._summarise())
        jobs = self._listed[1]
        if query is not None:
            return [j for j in jobs if query.matches(j)]
        return list(jobs)

    def _summarise(self) -> list[JobSummary]:
        primaries = self.cache["primary"].values()
        jobs = []
        inputs = self._waiting_inputs()
        for primary in primaries:
            try:
                jobs.append(self.view(primary, inputs).summary)
            except (KeyError, ValueError):
                continue  # not one of ours, or written by an incompatible version
        if len(self._derived) > len(primaries):  # forget deleted jobs
            alive = {p["metadata"].get("uid") for p in primaries}
            self._derived = {u: d for u, d in self._derived.items() if u in alive}
        return sorted(jobs, key=lambda j: (j.submission_time, j.id), reverse=True)

    # -- virtual clusters ------------------------------------------------------------------

    def virtual_cluster_caps(self) -> dict[str, VirtualCluster] | None:
        """Virtual clusters by name without jobs' counts (waiting reasons, submission
        checks); None where the flavor lists none."""
        found = self.flavor.virtual_clusters(self.objects, [], None)
        return None if found is None else {v.name: v for v in found}

    def virtual_clusters(
        self, jobs: list[JobSummary], cluster: Resources, allowed: Sequence[str]
    ) -> list[VirtualCluster]:
        found = self.flavor.virtual_clusters(self.objects, jobs, cluster)
        if found is None:  # the scheduler lists none: those in use or allowed, uncapped
            names = sorted({j.virtual_cluster for j in jobs} | set(allowed))
            found = [
                VirtualCluster(name=n, capacity=cluster, used=Resources(), free=cluster)
                for n in names or ["default"]
            ]
        if allowed:
            found = [v for v in found if v.name in allowed]
        return found


def events_since(events: Sequence[Obj], created: Any) -> list[Obj]:
    """The events not older than ``created`` (names come back with a resubmitted job, and
    events from before this one are not its). Compared as times, not text: an event's
    ``eventTime`` has microseconds where ``creationTimestamp`` has whole seconds."""
    since = parse_time(created)
    if since is None:
        return list(events)
    return [e for e in events if (_event_time(e) or since) >= since]


def _event_time(event: Obj) -> datetime | None:
    return parse_time(
        event.get("lastTimestamp")
        or event.get("eventTime")
        or (event.get("metadata") or {}).get("creationTimestamp")
    )


#: The names of a summary's fields. Every summary sets each, and the cached ones share this
#: one set of them: pydantic keeps a set per instance, 728 bytes, half of a summary.
SUMMARY_FIELDS = set(JobSummary.model_fields)


def summary(primary: Obj, job: JobProtocol, names: JobNames, view: JobView) -> JobSummary:
    made = JobSummary(
        id=names.job_id,
        name=names.name,
        user=names.user,
        state=view.state,
        sub_state=view.sub_state,
        virtual_cluster=job.virtual_cluster,
        kind=job.extras.kind,
        retries=view.retries,
        submission_time=primary["metadata"].get("creationTimestamp") or now(),
        launched_time=view.launched,
        completed_time=view.completed if view.state.terminal else None,
        exit_code=view.exit_code,
        total_gpu_number=job.total_gpus,
        total_task_number=job.total_instances,
        total_task_role_number=len(job.task_roles),
        waiting_reason=view.waiting_reason,
    )
    if made.model_fields_set == SUMMARY_FIELDS:
        object.__setattr__(made, "__pydantic_fields_set__", SUMMARY_FIELDS)
    return made


def detail(primary: Obj, job: JobProtocol, names: JobNames, view: JobView) -> JobDetail:
    tasks = [
        TaskStatus(
            role=t.role,
            index=t.index,
            state=t.state,
            node=t.node,
            ip=t.ip,
            gpu_number=t.gpus,
            ports=dict(t.ports),
            exit_code=t.exit_code,
            exit_reason=t.exit_reason,
            retries=t.retries,
            started_time=t.started,
            completed_time=t.completed,
        )
        for t in view.tasks
    ]
    return JobDetail(
        **summary(primary, job, names, view).model_dump(), spec=public_spec(job), tasks=tasks
    )
