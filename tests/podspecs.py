"""The pod specs inside what a flavor builds: a bare Pod's, a Job's template, a Volcano
Job's tasks', a JobSet's replicated Jobs'. For tests that hold every pod jupyter-pai makes
to a rule (Pod Security, the VC policies) whatever object carries it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

Manifest = dict[str, Any]


def pod_templates(obj: Manifest) -> Iterator[tuple[str, Manifest]]:
    """(where, pod template with ``metadata`` and ``spec``) for each pod ``obj`` makes."""
    kind, spec = obj.get("kind"), obj.get("spec") or {}
    name = (obj.get("metadata") or {}).get("name", "")
    if kind == "Pod":
        yield f"Pod {name}", {"metadata": obj.get("metadata") or {}, "spec": spec}
    elif kind == "Job" and obj["apiVersion"].startswith("batch.volcano.sh/"):
        for task in spec.get("tasks") or []:
            yield f"Volcano Job {name} task {task['name']}", task["template"]
    elif kind == "Job":
        yield f"Job {name}", spec["template"]
    elif kind == "JobSet":
        for job in spec.get("replicatedJobs") or []:
            yield f"JobSet {name} job {job['name']}", job["template"]["spec"]["template"]


def jobset(name: str, queue: str | None, template: Manifest) -> Manifest:
    """A JobSet of one replicated Job ``w`` of one pod from ``template`` (``metadata`` and
    ``spec``), in Kueue's LocalQueue ``queue`` where given, never retried."""
    labels = {"kueue.x-k8s.io/queue-name": queue} if queue else {}
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "replicatedJobs": [
                {
                    "name": "w",
                    "replicas": 1,
                    "template": {"spec": {"backoffLimit": 0, "template": template}},
                }
            ]
        },
    }
