"""What the watch cache keeps of an object: all but server-side apply's bookkeeping."""

from __future__ import annotations

import copy
import json

from jupyter_pai.backends.kubernetes.watch import _slim

CONFIG_MAP = {
    "apiVersion": "v1",
    "kind": "ConfigMap",
    "metadata": {
        "name": "alice-train-1a2b3",
        "namespace": "default",
        "resourceVersion": "812",
        "labels": {"app.kubernetes.io/managed-by": "jupyter-pai"},
        "annotations": {"jupyter-pai.io/job-id": "alice~train"},
        "managedFields": [
            {
                "manager": "jupyter-pai",
                "operation": "Update",
                "apiVersion": "v1",
                "fieldsType": "FieldsV1",
                "fieldsV1": {"f:metadata": {"f:labels": {".": {}}}},
            }
        ],
    },
    "data": {"state": "created"},
}


def test_the_store_drops_managed_fields_only() -> None:
    kept = _slim(copy.deepcopy(CONFIG_MAP))
    expected = copy.deepcopy(CONFIG_MAP)
    del expected["metadata"]["managedFields"]  # type: ignore[attr-defined]
    assert kept == expected


def test_objects_without_metadata_pass_unchanged() -> None:
    assert _slim({"kind": "Status"}) == {"kind": "Status"}
    assert _slim({"metadata": None}) == {"metadata": None}


def test_an_event_keeps_only_what_is_read_of_it() -> None:
    from jupyter_pai.backends.kubernetes.watch import slim_event

    event = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {
            "name": "pod.1",
            "namespace": "alice",
            "uid": "u",
            "resourceVersion": "7",
            "creationTimestamp": "2026-11-27T07:00:00Z",
            "managedFields": [{"manager": "kubelet"}],
            "annotations": {"x": "y"},
        },
        "involvedObject": {"kind": "Pod", "name": "pod", "uid": "p"},
        "reason": "FailedScheduling",
        "message": "0/4 nodes are available" + "." * 5000,
        "type": "Warning",
        "source": {"component": "default-scheduler"},
        "reportingComponent": "default-scheduler",
        "count": 3,
        "firstTimestamp": "2026-11-27T07:00:00Z",
        "lastTimestamp": "2026-11-27T07:00:05Z",
        "eventTime": None,
    }
    slim = slim_event(event)
    assert set(slim) == {
        "metadata",
        "involvedObject",
        "reason",
        "message",
        "type",
        "firstTimestamp",
        "lastTimestamp",
        "eventTime",
    }
    assert slim["metadata"] == {
        "name": "pod.1",
        "namespace": "alice",
        "uid": "u",
        "resourceVersion": "7",
        "creationTimestamp": "2026-11-27T07:00:00Z",
    }
    assert slim["message"].startswith("0/4 nodes are available") and len(slim["message"]) == 2049


def test_short_text_is_shared_between_cached_objects_and_long_text_is_not() -> None:
    spec = "x" * 65
    # As they come from the API server: each object's strings its own.
    first, second = (
        json.loads(json.dumps(CONFIG_MAP | {"data": {"spec": spec, "state": "created"}}))
        for _ in range(2)
    )
    assert first["kind"] is not second["kind"]
    a, b = _slim(first), _slim(second)
    assert a == b and a["data"]["spec"] == spec
    assert a["kind"] is b["kind"]
    owner = "app.kubernetes.io/managed-by"
    assert a["metadata"]["labels"][owner] is b["metadata"]["labels"][owner]
    assert next(iter(a["metadata"])) is next(iter(b["metadata"]))  # keys too
    assert a["data"]["spec"] is not b["data"]["spec"]
