"""The ConfigMap that keeps an evicted attempt's log, and the one that says it is lost."""

from __future__ import annotations

import base64
from typing import Any

from jupyter_pai.backends.kubernetes.logarchive import (
    ANN_DROPPED,
    ANN_LOST,
    KEEP_BYTES,
    archive_manifest,
    lost_note,
)
from jupyter_pai.backends.kubernetes.naming import (
    LABEL_ARCHIVED,
    LABEL_INDEX,
    LABEL_ROLE,
    make_names,
)
from jupyter_pai.spec import parse_job

JOB = parse_job(
    """
protocolVersion: 2
name: t
type: job
taskRoles:
  worker: {instances: 2, commands: [sleep 1], resourcePerInstance: {gpu: 0}}
"""
).job
NAMES = make_names(JOB, "alice")
PRIMARY = {
    "apiVersion": "v1",
    "kind": "ConfigMap",
    "metadata": {"name": NAMES.base, "uid": "p-uid"},
}
POD = {
    "metadata": {
        "name": f"{NAMES.base}-worker-1",
        "uid": "0123456789abcdef",
        "creationTimestamp": "2026-01-01T00:00:01Z",
        "labels": {"jupyter-pai.io/vc": "default"},
    }
}


def _log(body: dict[str, Any]) -> bytes:
    return base64.b64decode(body["binaryData"]["log"])


def test_a_kept_log_is_its_last_bytes_labelled_with_its_task() -> None:
    log = b"x" * 10 + b"y" * KEEP_BYTES
    body = archive_manifest(NAMES, PRIMARY, POD, ("worker", 1), log)
    meta = body["metadata"]
    assert meta["name"] == f"{NAMES.base}-log-01234567"
    assert meta["labels"][LABEL_ARCHIVED] == "true"
    assert (meta["labels"][LABEL_ROLE], meta["labels"][LABEL_INDEX]) == ("worker", "1")
    assert meta["annotations"][ANN_DROPPED] == "10"
    assert ANN_LOST not in meta["annotations"]
    assert meta["ownerReferences"][0]["uid"] == "p-uid"
    assert _log(body) == b"y" * KEEP_BYTES


def test_a_lost_log_is_kept_as_an_attempt_that_says_so() -> None:
    """The attempt still counts (the task's attempts stay numbered as they ran), and a
    reader of it learns why there is nothing else."""
    note = lost_note(POD, Exception('pods "p" not found'))
    assert (
        note
        == (
            f"jupyter-pai: the log of this attempt is lost: pod {NAMES.base}-worker-1 was deleted"
            ' before its log could be read (pods "p" not found)\n'
        ).encode()
    )
    body = archive_manifest(NAMES, PRIMARY, POD, ("worker", 1), note, lost=True)
    assert body["metadata"]["annotations"][ANN_LOST] == "true"
    assert body["metadata"]["annotations"][ANN_DROPPED] == "0"
    assert _log(body) == note
