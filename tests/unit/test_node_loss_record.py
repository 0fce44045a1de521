"""What a job records of a node it lost: read from the pod's ``DisruptionTarget``
condition, kept on the primary as JSON, shown as an event and in words."""

from __future__ import annotations

import json
from typing import Any

from jupyter_pai.backends.kubernetes.nodeloss import (
    ANN_LOST_NODES,
    LostNode,
    events,
    lost_node,
    recorded,
    summary,
)


def _pod(reason: str, node: str | None = "gpu-1") -> dict[str, Any]:
    return {
        "metadata": {"name": "p", "labels": {}},
        "spec": {"nodeName": node} if node else {},
        "status": {
            "phase": "Failed",
            "conditions": [
                {"type": "Ready", "status": "False"},
                {
                    "type": "DisruptionTarget",
                    "status": "True",
                    "reason": reason,
                    "lastTransitionTime": "2026-11-27T06:31:57Z",
                },
            ],
        },
    }


def role_index(pod: Any) -> tuple[str | None, int | None]:
    return "worker", 1


def test_a_pod_deleted_for_its_gone_node_names_node_time_and_task() -> None:
    assert lost_node(_pod("DeletionByPodGC"), role_index) == LostNode(
        node="gpu-1",
        time="2026-11-27T06:31:57Z",
        task="worker-1",
        why="the node no longer exists",
    )
    tainted = lost_node(_pod("DeletionByTaintManager"), role_index)
    assert tainted is not None and tainted.why == "the node was unreachable (NoExecute taint)"


def test_other_disruptions_are_no_node_loss() -> None:
    assert lost_node(_pod("PreemptionByScheduler"), role_index) is None
    assert lost_node(_pod("DeletionByPodGC", node=None), role_index) is None
    assert lost_node({"metadata": {}, "status": {}}, role_index) is None


def test_the_record_on_the_primary_reads_back_as_event_and_words() -> None:
    lost = lost_node(_pod("DeletionByPodGC"), role_index)
    assert lost is not None
    primary = {
        "metadata": {
            "annotations": {ANN_LOST_NODES: json.dumps([lost.__dict__])},
        }
    }
    assert recorded(primary) == [lost]
    [event] = events(primary)
    assert (event.type, event.reason) == ("Warning", "NodeLost")
    assert (
        event.message == "node gpu-1 was lost (the node no longer exists); task worker-1 ran there"
    )
    assert summary(primary) == (
        "node gpu-1 was lost (the node no longer exists); task worker-1 ran there "
        "at 2026-11-27T06:31:57Z"
    )
    # Unreadable or absent: nothing, never an error.
    assert recorded({"metadata": {"annotations": {ANN_LOST_NODES: "{"}}}) == []
    assert summary({"metadata": {}}) is None
