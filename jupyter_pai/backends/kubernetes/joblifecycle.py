"""Writing a job's objects: the checks a submission needs the cluster for, creation in
order with rollback, and ending a job through its flavor's steps — when its user stops it,
or when OpenPAI's completion policy has decided while pods still run and the scheduler does
not act on that decision itself (``Flavor.ends_itself``).

Endings are watched for, not waited for: every change the watch cache sees to a job's pods
or primary re-derives that job's view, so a running backend ends a decided job within a
watch event of the pod that decided it, whether or not anyone asks for the job."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Callable, Sequence
from typing import Any

from ...errors import Conflict, FieldError, Forbidden, SpecError, Unavailable
from ...spec.protocol import JobProtocol
from ..completion_policy import Decision
from ..models import JobState
from .flavors import StopStep
from .jobviews import OWNED, Derived, JobViews
from .naming import ANN_OUTCOME, ANN_STOP, LABEL_JOB, JobNames
from .nodeloss import NodeLossRecorder
from .resources import POD, kind_of, owner_reference
from .rest import ApiError, Obj, Rest, path, typed
from .states import JobView, now

#: How long a job may look forgotten by its controller before it is prompted.
RESYNC_SECONDS = 10.0
#: Kinds whose controllers make pods (batch and Volcano Jobs, JobSets) and pods themselves.
POD_MAKING_KINDS = frozenset({"Job", "JobSet", "Pod"})


def makes_pods(manifest: Obj) -> bool:
    return manifest.get("kind") in POD_MAKING_KINDS


def _raise_first_failure(results: list[Any]) -> None:
    """Of calls awaited at once (``gather(..., return_exceptions=True)``), the first failure."""
    for result in results:
        if isinstance(result, BaseException):
            raise result


class JobLifecycle:
    """Creates, stops and ends the jobs that ``views`` shows, through ``rest()``."""

    def __init__(
        self, views: JobViews, rest: Callable[[], Rest], log: logging.Logger | Any
    ) -> None:
        self.views = views
        self.flavor = views.flavor
        self.namespace = views.namespace
        self.rest = rest
        self.log = log
        # Jobs whose ending was started here (dropped again if it failed, to retry).
        self._ending: set[str] = set()
        self._endings: set[asyncio.Task[None]] = set()
        # Jobs (primary names) the watch cache saw change since the watcher last looked.
        self._changed: set[str] = set()
        self._wake = asyncio.Event()
        self._watcher: asyncio.Task[None] | None = None
        # Jobs seen waiting on a controller that missed an event → when (monotonic), and
        # when they were last prompted (at most once per RESYNC_SECONDS each).
        self._stuck: dict[str, float] = {}
        self._prompted: dict[str, float] = {}
        # The nodes jobs lose, written onto their primaries as the pods say so.
        self.node_losses = NodeLossRecorder(
            rest,
            lambda name: self.views.cache["primary"].get(name),
            self._annotate,
            self.flavor.role_index,
        )

    # -- submission ------------------------------------------------------------------------

    def check(self, job: JobProtocol, allowed: Sequence[str]) -> None:
        """Refuse, field by field, what the cluster cannot run: a virtual cluster the user
        may not use or the flavor does not have or cannot fit, a storage that is not there."""
        vc = job.virtual_cluster
        if allowed and vc not in allowed:
            raise SpecError(
                [
                    FieldError(
                        "defaults.virtualCluster",
                        f"you may not use virtual cluster {vc!r}; yours: {', '.join(allowed)}",
                    )
                ]
            )
        self.flavor.check_virtual_cluster(job, self.views.virtual_cluster_caps())
        refused = self.flavor.options.security.refusals(job)
        if refused:
            raise SpecError(refused)
        claims = self.views.claims()
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
        n = 2
        while self.views.taken(f"{names.user}~{names.name}-{n}"):
            n += 1
        return f"{names.name}-{n}"

    def conflict(self, names: JobNames) -> Conflict:
        return Conflict(
            f"job name {names.name!r} is taken; choose another, e.g. {self._suggest(names)!r}",
            [FieldError("name", "is already used by another of your jobs")],
        )

    async def create(self, objects: list[Obj], primary_index: int, names: JobNames) -> Obj:
        """Create the job's objects; any failure deletes what was created. In waves, each
        wave's objects at once (a kernel waits on every round trip): those before the
        primary, the primary, then those after it, the ones whose controllers make pods
        last so the Secret, Service and PodGroup their pods need exist first. Objects
        before the primary get their owner reference once it exists (a patch, which the
        flavours with such objects may make), those after it at creation."""
        rest = self.rest()
        ns = self.namespace
        own = self.flavor.own_kinds
        created: list[Obj] = []
        after = list(enumerate(objects[primary_index + 1 :], start=primary_index + 1))
        primary: Obj | None = None

        async def make(i: int, manifest: Obj) -> Obj:
            body = json.loads(json.dumps(manifest))
            body["metadata"]["namespace"] = ns
            if primary is not None:
                body["metadata"]["ownerReferences"] = [owner_reference(primary)]
            try:
                return await rest.create(kind_of(body, own), ns, body)
            except ApiError as error:
                if error.status == 409 and i == primary_index:
                    raise self.conflict(names) from None
                if error.status == 409:
                    raise Conflict(
                        f"object {body['metadata'].get('name')} of job {names.job_id} already exists; "
                        f"choose another name, e.g. {self._suggest(names)!r}"
                    ) from None
                raise typed(error) from None

        async def own_earlier(earlier: Obj) -> None:
            assert primary is not None
            await rest.patch(
                kind_of(earlier, own),
                ns,
                earlier["metadata"]["name"],
                {"metadata": {"ownerReferences": [owner_reference(primary)]}},
            )

        async def wave(items: list[tuple[int, Obj]]) -> list[Obj]:
            results = await asyncio.gather(*(make(i, m) for i, m in items), return_exceptions=True)
            made = [r for r in results if not isinstance(r, BaseException)]
            created.extend(made)  # undone too if a sibling failed
            _raise_first_failure(results)
            return made

        try:
            await wave(list(enumerate(objects[:primary_index])))
            (primary,) = await wave([(primary_index, objects[primary_index])])
            owned = [own_earlier(earlier) for earlier in created[:-1]]
            _raise_first_failure(await asyncio.gather(*owned, return_exceptions=True))
            await wave([(i, m) for i, m in after if not makes_pods(m)])
            await wave([(i, m) for i, m in after if makes_pods(m)])
        except BaseException:
            for obj in reversed(created):
                with contextlib.suppress(Exception):
                    await rest.delete(kind_of(obj, own), ns, obj["metadata"]["name"])
            raise
        assert primary is not None
        return primary

    # -- stop and completion ---------------------------------------------------------------

    async def stop(self, job_id: str, user: str) -> tuple[Obj, Derived]:
        """Mark the job stopped and run the flavor's stop steps; a job that has ended or is
        stopping is left as it is. The primary and view as they are afterwards."""
        primary = self.views.primary(job_id)
        names = JobNames.from_annotations(primary["metadata"]["annotations"])
        if names.user != user:
            raise Forbidden(f"job {job_id} belongs to {names.user}; only they may stop it")
        d = self.views.view(primary)
        if d.view.state.terminal or d.view.state == JobState.STOPPING:
            return primary, d
        try:
            primary = await self.rest().patch(
                self.flavor.primary_kind,
                self.namespace,
                primary["metadata"]["name"],
                {"metadata": {"annotations": {ANN_STOP: now()}}},
            )
            await self._run_stop_steps(primary, names)
        except ApiError as error:
            raise typed(error) from None
        return primary, self.views.view(primary)

    async def delete(self, job_id: str, user: str) -> None:
        """Delete an ended job's primary object; the garbage collector removes what it owns
        (pods, Secret, Service, kept logs)."""
        primary = self.views.primary(job_id)
        names = JobNames.from_annotations(primary["metadata"]["annotations"])
        if names.user != user:
            raise Forbidden(f"job {job_id} belongs to {names.user}; only they may delete it")
        state = self.views.view(primary).summary.state
        if not state.terminal:
            raise Conflict(f"job {job_id} is {state.value}: stop it before deleting it")
        try:
            await self.rest().call(
                "DELETE",
                path(self.flavor.primary_kind, self.namespace, primary["metadata"]["name"]),
                body={"propagationPolicy": "Background"},
            )
        except ApiError as error:
            if error.status != 404:
                raise typed(error) from None

    async def _run_stop_steps(self, primary: Obj, names: JobNames) -> None:
        rest = self.rest()
        for step in self.flavor.stop_steps(primary, names):
            await self._run_step(rest, step, names)

    async def _run_step(self, rest: Rest, step: StopStep, names: JobNames) -> None:
        ns = self.namespace
        if step.op == "create" and step.kind is not None:
            await rest.create(
                step.kind, ns, {**step.body, "metadata": {**step.body["metadata"], "namespace": ns}}
            )
        elif step.op == "patch" and step.kind is not None and step.name:
            with contextlib.suppress(ApiError):
                await rest.patch(step.kind, ns, step.name, step.body)
        elif step.op == "patch_owned" and step.kind is not None and step.name:
            # Objects the scheduler made for the job (owned by its primary, ``name``).
            for obj in self.views.owned(step.kind, step.name):
                with contextlib.suppress(ApiError):
                    await rest.patch(step.kind, ns, obj["metadata"]["name"], step.body)
        elif step.op in ("delete_pods", "delete_running_pods"):
            query = {"labelSelector": f"{OWNED},{LABEL_JOB}={names.base}"}
            if step.op == "delete_running_pods":  # ended pods keep their logs
                query["fieldSelector"] = "status.phase!=Succeeded,status.phase!=Failed"
            await rest.call("DELETE", path(POD, ns), query=query)

    def look(
        self, primary: Obj, job: Callable[[], JobProtocol], names: JobNames, view: JobView
    ) -> None:
        """What a running backend does for every job view it derives."""
        self.end_if_decided(primary, job, names, view)
        self.resync_if_stuck(primary, names, view)

    def resync_if_stuck(self, primary: Obj, names: JobNames, view: JobView) -> None:
        """A job the scheduler's controller has evidently forgotten (``Flavor.missed_event``)
        for RESYNC_SECONDS — not just a moment before it acts — is prompted to look again."""
        stuck = view.state == JobState.WAITING and self.flavor.missed_event(
            primary, self.views.related(names, primary), len(self.views.pods(names))
        )
        if not stuck:
            self._stuck.pop(names.job_id, None)
            return
        loop = asyncio.get_running_loop()
        if names.job_id not in self._stuck:
            self._stuck[names.job_id] = loop.time()
            # Look again then, whether or not anything changes by then.
            loop.call_later(RESYNC_SECONDS, self._primary_changed, primary)
            return
        if loop.time() - self._stuck[names.job_id] < RESYNC_SECONDS:
            return
        if loop.time() - self._prompted.get(names.job_id, -RESYNC_SECONDS) < RESYNC_SECONDS:
            return
        try:
            rest = self.rest()
        except Unavailable:
            return
        self._prompted[names.job_id] = loop.time()
        self._stuck.pop(names.job_id, None)
        task = loop.create_task(self._resync(rest, primary, names))
        self._endings.add(task)
        task.add_done_callback(self._endings.discard)

    async def _resync(self, rest: Rest, primary: Obj, names: JobNames) -> None:
        try:
            for step in self.flavor.resync_steps(primary, names):
                await self._run_step(rest, step, names)
            self.log.warning(
                "jupyter-pai: job %s waited %ss with its pod group admitted and no pods; "
                "prompted the scheduler's controller",
                names.job_id,
                RESYNC_SECONDS,
            )
        except Exception:
            self.log.exception("jupyter-pai: prompting job %s failed", names.job_id)

    def end_if_decided(
        self, primary: Obj, job: Callable[[], JobProtocol], names: JobNames, view: JobView
    ) -> None:
        """The completion policy decided while pods still run (a chief that succeeded while
        its workers run) and the scheduler will not end the job itself: record the outcome
        and run the flavor's ending steps, once, in the background (:meth:`drain` waits)."""
        annotations = primary["metadata"].get("annotations") or {}
        decision = view.decision
        if (
            decision is None
            or not view.active_pods
            or ANN_OUTCOME in annotations
            or names.job_id in self._ending
            or self.flavor.ends_itself(job(), decision)
        ):
            return
        try:
            rest = self.rest()
        except Unavailable:
            return  # not started: nothing can be written yet
        self._ending.add(names.job_id)
        task = asyncio.get_running_loop().create_task(self._end(rest, primary, names, decision))
        self._endings.add(task)
        task.add_done_callback(self._endings.discard)

    async def _end(self, rest: Rest, primary: Obj, names: JobNames, decision: Decision) -> None:
        outcome = {
            "state": decision.state.value,
            "reason": decision.reason,
            "exitCode": decision.exit_code,
            "time": now(),
        }
        try:
            primary = await rest.patch(
                self.flavor.primary_kind,
                self.namespace,
                primary["metadata"]["name"],
                {"metadata": {"annotations": {ANN_OUTCOME: json.dumps(outcome)}}},
            )
            for step in self.flavor.ending_steps(primary, names, decision):
                await self._run_step(rest, step, names)
            self.log.info("jupyter-pai: ended job %s: %s", names.job_id, decision.reason)
        except Exception:
            self._ending.discard(names.job_id)
            self.log.exception("jupyter-pai: ending job %s failed", names.job_id)

    # -- watching for decided jobs ---------------------------------------------------------

    def watch_endings(self) -> None:
        """Look at every job whose pods or primary the watch cache sees change (a relist
        counts), so decided jobs end with no one asking. Call before the cache starts."""
        self.views.cache["pods"].listeners.append(self._pod_changed)
        self.views.cache["pods"].listeners.append(self.node_losses.pod_changed)
        self.views.cache["primary"].listeners.append(self._primary_changed)
        self._watcher = asyncio.get_running_loop().create_task(
            self._watch(), name="jupyter-pai-endings"
        )

    def _pod_changed(self, pod: Obj) -> None:
        base = (pod["metadata"].get("labels") or {}).get(LABEL_JOB)
        if base:
            self._changed.add(base)
            self._wake.set()

    def _primary_changed(self, primary: Obj) -> None:
        self._changed.add(primary["metadata"]["name"])
        self._wake.set()

    async def _watch(self) -> None:
        primaries = self.views.cache["primary"]
        while True:
            await self._wake.wait()
            self._wake.clear()
            changed, self._changed = self._changed, set()
            for name in changed:
                primary = primaries.get(name)
                if primary is None:
                    continue
                try:
                    self.views.view(primary)  # its hook is look
                except (KeyError, ValueError):
                    continue  # not one of ours, or written by an incompatible version
                except Exception:
                    self.log.exception("jupyter-pai: looking at job %s failed", name)
            await asyncio.sleep(0)  # let the watches run between bursts

    async def drain(self, timeout: float = 30.0) -> None:
        """Stop watching and finish the endings under way, so a process that exits (the
        CLI, right after it saw a job decided) leaves no ending half-done."""
        if self._watcher is not None:
            self._watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watcher
            self._watcher = None
        if self._endings:
            await asyncio.wait(set(self._endings), timeout=timeout)
        await self.node_losses.drain()

    async def _annotate(self, rest: Rest, primary: Obj, body: dict[str, Any]) -> None:
        await rest.patch(
            self.flavor.primary_kind, self.namespace, primary["metadata"]["name"], body
        )
