"""Nodes a job lost. When a node goes (deleted, or unreachable long enough for its
``NoExecute`` taint to evict), Kubernetes marks each pod on it with the condition
``DisruptionTarget`` (reason ``DeletionByPodGC`` or ``DeletionByTaintManager``) and deletes
it; the job then goes on, waits or fails as its flavor's rules say (the scheduler's doing).
What the pods said goes with them, so a running backend that sees the mark writes it onto
the job's primary object (:data:`ANN_LOST_NODES`: node, time, task): the cluster keeps it
with the job, every backend lists it as a ``NodeLost`` event, and a job that waits or
failed since says which node it lost."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from ..models import JobEvent
from .naming import DOMAIN, LABEL_JOB
from .rest import ApiError, Obj, Rest

log = logging.getLogger(__name__)

ANN_LOST_NODES = f"{DOMAIN}/lost-nodes"
#: ``DisruptionTarget`` reasons that mean the pod's node is gone, not that it was preempted.
NODE_GONE = {
    "DeletionByPodGC": "the node no longer exists",
    "DeletionByTaintManager": "the node was unreachable (NoExecute taint)",
}


@dataclass(frozen=True)
class LostNode:
    node: str
    time: str
    task: str
    why: str

    def message(self) -> str:
        return f"node {self.node} was lost ({self.why}); task {self.task} ran there"


RoleIndex = Callable[[Obj], tuple[str | None, int | None]]


def lost_node(pod: Obj, role_index: RoleIndex) -> LostNode | None:
    """The node ``pod`` lost, from its ``DisruptionTarget`` condition; None otherwise.
    ``role_index``: the flavor's reading of the pod's task (role slug, index)."""
    for c in (pod.get("status") or {}).get("conditions") or []:
        why = NODE_GONE.get(str(c.get("reason")))
        if c.get("type") == "DisruptionTarget" and c.get("status") == "True" and why:
            node = (pod.get("spec") or {}).get("nodeName")
            if not node:
                return None
            role, index = role_index(pod)
            task = f"{role or '?'}-{'?' if index is None else index}"
            when = str(c.get("lastTransitionTime") or "")
            return LostNode(node=str(node), time=when, task=task, why=why)
    return None


def recorded(primary: Obj) -> list[LostNode]:
    raw = (primary["metadata"].get("annotations") or {}).get(ANN_LOST_NODES)
    if not raw:
        return []
    try:
        return [LostNode(**entry) for entry in json.loads(raw)]
    except (ValueError, TypeError):
        return []


def events(primary: Obj) -> list[JobEvent]:
    return [
        JobEvent(time=lost.time, type="Warning", reason="NodeLost", message=lost.message())
        for lost in recorded(primary)
        if lost.time
    ]


def summary(primary: Obj) -> str | None:
    """What the job lost, in words, for a job that waits or failed since; None if nothing."""
    lost = recorded(primary)
    if not lost:
        return None
    return "; ".join(f"{x.message()} at {x.time}" for x in lost)


class NodeLossRecorder:
    """Writes the lost nodes of the pods the watch sees marked onto their jobs' primaries
    (a merge of what is there; one write per loss)."""

    def __init__(
        self,
        rest: Callable[[], Rest],
        primaries: Callable[[str], Obj | None],
        patch: Callable[[Rest, Obj, dict[str, Any]], Any],
        role_index: RoleIndex,
    ) -> None:
        self._rest = rest
        self._role_index = role_index
        self._primaries = primaries
        self._patch = patch
        self._seen: set[tuple[str, str, str]] = set()
        self._tasks: set[asyncio.Task[None]] = set()

    def pod_changed(self, pod: Obj) -> None:
        lost = lost_node(pod, self._role_index)
        base = (pod["metadata"].get("labels") or {}).get(LABEL_JOB)
        if lost is None or not base or (base, lost.node, lost.task) in self._seen:
            return
        self._seen.add((base, lost.node, lost.task))
        task = asyncio.get_running_loop().create_task(self._record(base, lost))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _record(self, base: str, lost: LostNode) -> None:
        primary = self._primaries(base)
        if primary is None:
            return
        known = recorded(primary)
        if any(x.node == lost.node and x.task == lost.task for x in known):
            return
        entries = [asdict(x) for x in [*known, lost]]
        body = {"metadata": {"annotations": {ANN_LOST_NODES: json.dumps(entries)}}}
        try:
            await self._patch(self._rest(), primary, body)
            log.info("jupyter-pai: job %s: %s", base, lost.message())
        except (ApiError, OSError) as error:
            self._seen.discard((base, lost.node, lost.task))
            log.warning(
                "jupyter-pai: could not record on %s that %s: %s", base, lost.message(), error
            )

    async def drain(self, timeout: float = 10.0) -> None:
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=timeout)
