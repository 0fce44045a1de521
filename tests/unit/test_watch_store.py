"""What the watch cache keeps of an object: all but server-side apply's bookkeeping."""

from __future__ import annotations

import copy

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
