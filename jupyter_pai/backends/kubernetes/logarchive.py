"""The logs of attempts whose pods are deleted while their job goes on.

A scheduler that preempts a job deletes its pods (Volcano's ``reclaim`` evicts them, the
job's ``PodEvicted → RestartJob`` policy makes new ones of the same names), and Kubernetes
drops a pod's log with the pod. So a running backend watches for pods of its jobs that are
being deleted while their job neither ends nor stops, follows each one's log until its
container exits, and keeps the log's last :data:`KEEP_BYTES` in a ConfigMap owned by the
job's primary object: the cluster keeps it, the garbage collector removes it with the job,
and every backend lists those attempts (``states.tasks_from_pods``). With no jupyter-pai
process running when the pods go, their logs go with them (the README says so)."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
from collections.abc import Callable
from typing import Any

from .jobviews import JobViews
from .logs import pod_log, secret_values
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
from .resources import CONFIG_MAP, owner_reference
from .rest import ApiError, Obj, Rest
from .states import VOLCANO_ENDING

ANN_POD = f"{DOMAIN}/pod"
ANN_DROPPED = f"{DOMAIN}/dropped-bytes"
#: A ConfigMap holds at most 1 MiB; a log's head matters less than its end.
KEEP_BYTES = 512 * 1024
#: How long to follow a terminating pod's log beyond its grace period.
FOLLOW_MARGIN_SECONDS = 30.0


def archive_name(names: JobNames, pod: Obj) -> str:
    return f"{names.base}-log-{str(pod['metadata'].get('uid', ''))[:8]}"


def started(pod: Obj) -> bool:
    """Whether a container of the pod ever ran (so it has a log worth keeping)."""
    for status in (pod.get("status") or {}).get("containerStatuses") or []:
        state = {**(status.get("state") or {}), **(status.get("lastState") or {})}
        if "running" in state or "terminated" in state:
            return True
    return False


def goes_on_without(primary: Obj, pod: Obj) -> bool:
    """The pod is being deleted while its job neither ends nor stops: an eviction."""
    if not (pod["metadata"].get("deletionTimestamp") and started(pod)):
        return False
    annotations = primary["metadata"].get("annotations") or {}
    phase = ((primary.get("status") or {}).get("state") or {}).get("phase")
    return not annotations.get(ANN_STOP) and phase not in (*VOLCANO_ENDING, "Aborting", "Aborted")


def archive_manifest(
    names: JobNames, primary: Obj, pod: Obj, where: tuple[str | None, int | None], log: bytes
) -> Obj:
    """``where``: the pod's (role slug, index), as the flavour reads them."""
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
            },
            "ownerReferences": [owner_reference(primary)],
        },
        "binaryData": {"log": base64.b64encode(log[dropped:]).decode()},
    }


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

    def _pod_changed(self, pod: Obj) -> None:
        uid = str(pod["metadata"].get("uid", ""))
        base = (pod["metadata"].get("labels") or {}).get(LABEL_JOB)
        if not base or uid in self._seen or not pod["metadata"].get("deletionTimestamp"):
            return
        primary = self.views.cache["primary"].get(base)
        if primary is None or not goes_on_without(primary, pod):
            return
        try:
            rest = self.rest()
        except Exception:
            return  # not started
        self._seen.add(uid)
        task = asyncio.get_running_loop().create_task(self._archive(rest, primary, pod))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _archive(self, rest: Rest, primary: Obj, pod: Obj) -> None:
        names = JobNames.from_annotations(primary["metadata"]["annotations"])
        job = self.views.view(primary).job
        grace = float((pod.get("spec") or {}).get("terminationGracePeriodSeconds") or 30)
        kept = bytearray()
        try:
            chunks = await pod_log(
                rest,
                self.views.namespace,
                pod["metadata"]["name"],
                follow=True,
                secrets=await secret_values(rest, self.views.namespace, job, names),
            )
            async with asyncio.timeout(grace + FOLLOW_MARGIN_SECONDS):
                async for chunk in chunks:
                    kept += chunk
                    if len(kept) > 2 * KEEP_BYTES:
                        del kept[: len(kept) - KEEP_BYTES]
        except (ApiError, TimeoutError, OSError) as error:
            if not kept:
                self.log.warning(
                    "jupyter-pai: the log of evicted pod %s is lost: %s",
                    pod["metadata"]["name"],
                    error,
                )
                return
        where = self.views.flavor.role_index(pod)
        body = archive_manifest(names, primary, pod, where, bytes(kept))
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
        for task in self._tasks:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
