"""The logs of attempts whose pods are deleted while their job goes on.

A scheduler that preempts a job deletes its pods (and, the job going on, makes new ones,
often of the same names), and Kubernetes drops a pod's log with the pod. So a running
backend watches for pods of its jobs that are being deleted while their job neither ends
nor stops (its flavor says whether the scheduler ends it: ``Flavor.ended``), follows each
one's log until its container exits, and keeps the log's last :data:`KEEP_BYTES` in a
ConfigMap owned by the job's primary object: the cluster keeps it, the garbage collector
removes it with the job, and every backend lists those attempts
(``states.tasks_from_pods``). Nothing keeps the logs of pods that go while no jupyter-pai
process runs: no one is watching then.

The race with the deletion is short: kubelet removes a pod as soon as its container has
exited on SIGTERM. Where the scheduler marks an eviction before the pods go, the logs are
followed from that mark: on an object of the job (``Flavor.evicted_at``), or on the pod
(``Flavor.pod_evicted``), a moment before the deletion. An attempt whose log was gone
before it could be read is still kept, as a ConfigMap saying so, so the task's attempts
stay numbered as they ran."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
from collections.abc import AsyncGenerator, Callable
from typing import Any

from ..logredaction import LogRedactor, LogSecrets
from .flavors import Flavor
from .jobviews import JobViews, labels_and_owners
from .logs import secret_values
from .naming import (
    ANN_POD_CREATED,
    ANN_STOP,
    DOMAIN,
    LABEL_ARCHIVED,
    LABEL_INDEX,
    LABEL_JOB,
    LABEL_ROLE,
    LABEL_VC,
    JobNames,
    base_labels,
)
from .podlog import pod_log
from .resources import CONFIG_MAP, owner_reference
from .rest import ApiError, Obj, Rest

ANN_POD = f"{DOMAIN}/pod"
ANN_DROPPED = f"{DOMAIN}/dropped-bytes"
ANN_LOST = f"{DOMAIN}/log-lost"
#: A ConfigMap holds at most 1 MiB; a log's head matters less than its end.
KEEP_BYTES = 512 * 1024
#: How long to follow a terminating pod's log beyond its grace period.
FOLLOW_MARGIN_SECONDS = 30.0
#: How long a log followed from an eviction mark waits, once it ends, to see its pod go.
TAKEN_WAIT_SECONDS = 5.0


def archive_name(names: JobNames, pod: Obj) -> str:
    return f"{names.base}-log-{str(pod['metadata'].get('uid', ''))[:8]}"


def started(pod: Obj) -> bool:
    """Whether a container of the pod ever ran (so it has a log worth keeping)."""
    for status in (pod.get("status") or {}).get("containerStatuses") or []:
        state = {**(status.get("state") or {}), **(status.get("lastState") or {})}
        if "running" in state or "terminated" in state:
            return True
    return False


def goes_on(primary: Obj, flavor: Flavor) -> bool:
    """The job neither ends nor stops (by its stop mark, or by the scheduler's account)."""
    annotations = primary["metadata"].get("annotations") or {}
    return not annotations.get(ANN_STOP) and flavor.ended(primary) is None


def lost_note(pod: Obj, error: Exception) -> bytes:
    """What an attempt's log says where the pod was gone before its log could be read."""
    return (
        f"jupyter-pai: the log of this attempt is lost: pod {pod['metadata']['name']} was "
        f"deleted before its log could be read ({error})\n"
    ).encode()


def archive_manifest(
    names: JobNames,
    primary: Obj,
    pod: Obj,
    where: tuple[str | None, int | None],
    log: bytes,
    *,
    lost: bool = False,
) -> Obj:
    """``where``: the pod's (role slug, index), as the flavor reads them; ``lost``: ``log``
    is :func:`lost_note`, not the pod's."""
    labels = pod["metadata"].get("labels") or {}
    dropped = max(0, len(log) - KEEP_BYTES)
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": archive_name(names, pod),
            "labels": {
                **base_labels(names, labels.get(LABEL_VC, "")),
                LABEL_ARCHIVED: "true",
                LABEL_ROLE: where[0] or "",
                LABEL_INDEX: "" if where[1] is None else str(where[1]),
            },
            "annotations": {
                ANN_POD: pod["metadata"]["name"],
                ANN_POD_CREATED: pod["metadata"].get("creationTimestamp") or "",
                ANN_DROPPED: str(dropped),
                **({ANN_LOST: "true"} if lost else {}),
            },
            "ownerReferences": [owner_reference(primary)],
        },
        "binaryData": {"log": base64.b64encode(log[dropped:]).decode()},
    }


class KeptLog:
    """An attempt's log as it is read, redacted on the way in (so trimming its front can
    cut no secret in two), of which at most about :data:`KEEP_BYTES` are held."""

    def __init__(self, secrets: LogSecrets | None = None) -> None:
        self._redactor = LogRedactor(secrets or LogSecrets())
        self._kept = bytearray()

    def add(self, chunk: bytes) -> None:
        self._kept += self._redactor.feed(chunk)
        if len(self._kept) > 2 * KEEP_BYTES:
            del self._kept[: len(self._kept) - KEEP_BYTES]

    def __bool__(self) -> bool:
        return bool(self._kept) or self._redactor.holding

    def end(self) -> bytes:
        """The log read, redacted, once it has ended (``archive_manifest`` keeps its last
        :data:`KEEP_BYTES`)."""
        self._kept += self._redactor.close()
        return bytes(self._kept)


class LogArchiver:
    """Keeps the logs of evicted attempts of the jobs ``views`` watches."""

    def __init__(
        self, views: JobViews, rest: Callable[[], Rest], log: logging.Logger | Any
    ) -> None:
        self.views = views
        self.rest = rest
        self.log = log
        self._seen: set[str] = set()  # pod uids archived or being archived
        self._tasks: set[asyncio.Task[None]] = set()

    def watch(self) -> None:
        """Call before the cache starts."""
        self.views.cache["pods"].listeners.append(self._pod_changed)
        kind = self.views.flavor.eviction_kind
        if kind is not None:
            self.views.reflector(kind).listeners.append(self._eviction_changed)

    def _pod_changed(self, pod: Obj) -> None:
        base = (pod["metadata"].get("labels") or {}).get(LABEL_JOB)
        deleting = bool(pod["metadata"].get("deletionTimestamp"))
        marked = not deleting and self.views.flavor.pod_evicted(pod)
        if not base or not (deleting or marked):
            return
        primary = self.views.cache["primary"].get(base)
        if primary is not None and started(pod) and goes_on(primary, self.views.flavor):
            self._follow(primary, pod, marked=marked)

    def _eviction_changed(self, obj: Obj) -> None:
        """The scheduler marked a job evicted: follow its pods' logs before they go."""
        since = self.views.flavor.evicted_at(obj)
        if since is None:
            return
        for base in filter(None, labels_and_owners(obj)):
            primary = self.views.cache["primary"].get(base)
            if primary is None or not goes_on(primary, self.views.flavor):
                continue
            for pod in self.views.cache["pods"].by_index(base):
                if started(pod) and str(pod["metadata"].get("creationTimestamp", "")) <= since:
                    self._follow(primary, pod, marked=True)

    def _follow(self, primary: Obj, pod: Obj, *, marked: bool) -> None:
        uid = str(pod["metadata"].get("uid", ""))
        if uid in self._seen:
            return
        try:
            rest = self.rest()
        except Exception:
            return  # not started
        self._seen.add(uid)
        why = "marked evicted" if marked else "being deleted"
        self.log.debug("jupyter-pai: following the log of pod %s, %s", pod["metadata"]["name"], why)
        # The log is asked for before anything else: every moment counts against kubelet,
        # which removes the pod as soon as its container has exited.
        opening = asyncio.get_running_loop().create_task(
            pod_log(rest, self.views.namespace, pod["metadata"]["name"], follow=True)
        )
        task = asyncio.get_running_loop().create_task(
            self._archive(rest, primary, pod, opening, marked)
        )
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _seen_taken(self, pod: Obj) -> bool:
        """Whether the watch shows the pod taken within :data:`TAKEN_WAIT_SECONDS`: its
        log ended as its container exited, which the deletion comes before, but the
        watch may tell of it a moment later."""
        deadline = asyncio.get_running_loop().time() + TAKEN_WAIT_SECONDS
        while not self._taken(pod):
            if asyncio.get_running_loop().time() > deadline:
                return False
            await asyncio.sleep(0.1)
        return True

    def _taken(self, pod: Obj) -> bool:
        """The pod is gone or going (by the watch), and its job goes on."""
        meta = pod["metadata"]
        now = self.views.cache["pods"].get(meta["name"], self.views.namespace)
        if now is not None and now["metadata"].get("uid") == meta.get("uid"):
            if not now["metadata"].get("deletionTimestamp"):
                return False
        primary = self.views.cache["primary"].get(meta.get("labels", {}).get(LABEL_JOB, ""))
        return primary is not None and goes_on(primary, self.views.flavor)

    async def _archive(
        self,
        rest: Rest,
        primary: Obj,
        pod: Obj,
        opening: asyncio.Task[AsyncGenerator[bytes, None]],
        marked: bool,
    ) -> None:
        """``opening``: the request for the pod's log; ``marked``: followed from the
        eviction mark, before the pod's deletion (kept only if the pod does go while the
        job goes on)."""
        names = JobNames.from_annotations(primary["metadata"]["annotations"])
        job = self.views.view(primary).job
        grace = float((pod.get("spec") or {}).get("terminationGracePeriodSeconds") or 30)
        kept = KeptLog()
        lost: Exception | None = None
        try:
            secrets = LogSecrets.of(await secret_values(rest, self.views.namespace, job, names))
            kept = KeptLog(secrets)
            async with asyncio.timeout(grace + FOLLOW_MARGIN_SECONDS):
                chunks = await opening
                try:
                    async for chunk in chunks:
                        kept.add(chunk)
                finally:
                    await chunks.aclose()
        except (ApiError, OSError) as error:
            lost = None if kept else error
        except TimeoutError:
            pass
        finally:
            opening.cancel()
        if marked and not await self._seen_taken(pod):
            # A false alarm, or the pod outlived the follow: its deletion starts a new one.
            self._seen.discard(str(pod["metadata"].get("uid", "")))
            return
        if lost is not None:
            self.log.warning(
                "jupyter-pai: the log of evicted pod %s is lost: %s", pod["metadata"]["name"], lost
            )
        log = lost_note(pod, lost) if lost is not None else kept.end()
        where = self.views.flavor.role_index(pod)
        body = archive_manifest(names, primary, pod, where, log, lost=lost is not None)
        try:
            await rest.create(CONFIG_MAP, self.views.namespace, body)
        except ApiError as error:
            if error.status != 409:  # 409: another server kept it already
                self.log.warning(
                    "jupyter-pai: keeping the log of %s failed: %s", pod["metadata"]["name"], error
                )

    async def drain(self, timeout: float = 60.0) -> None:
        """Finish the archives under way (a process that exits keeps what it started)."""
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=timeout)
        # A copy: each task leaves the set as it ends, while this loop awaits the others.
        for task in list(self._tasks):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
