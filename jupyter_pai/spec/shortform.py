"""The short form: ``name, image, command, gpus, instances, vc`` expanding to protocol v2.

It is sugar for notebook users and the CLI (``jupyter pai submit --image … -- cmd``); the
result is validated by the same model as any OpenPAI job.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

SHORT_KEYS = {
    "name", "image", "command", "commands", "gpus", "gpu", "instances", "vc", "cpu",
    "memoryMB", "ports", "parameters", "secrets", "role", "gang", "storages",
    "retries", "taskRetries", "description",
}
DEFAULT_ROLE = "worker"


def is_short_form(doc: Mapping[str, Any]) -> bool:
    return "protocolVersion" not in doc and "taskRoles" not in doc


def expand(doc: Mapping[str, Any]) -> dict[str, Any]:
    """Return the protocol-v2 document for a short-form one (unknown keys are kept at top level
    so that validation reports them as warnings with their own names)."""
    role = doc.get("role", DEFAULT_ROLE)
    command = doc.get("commands", doc.get("command"))
    resource: dict[str, Any] = {"gpu": doc.get("gpus", doc.get("gpu", 0))}
    for key in ("cpu", "memoryMB", "ports"):
        if key in doc:
            resource[key] = doc[key]
    task_role: dict[str, Any] = {"instances": doc.get("instances", 1), "resourcePerInstance": resource}
    if command is not None:
        task_role["commands"] = command
    if "taskRetries" in doc:
        task_role["taskRetryCount"] = doc["taskRetries"]
    job: dict[str, Any] = {
        "protocolVersion": 2,
        "name": doc.get("name"),
        "type": "job",
        "taskRoles": {role: task_role},
    }
    if "image" in doc:
        job["prerequisites"] = [{"name": "image", "type": "dockerimage", "uri": doc["image"]}]
        task_role["dockerImage"] = "image"
    if "vc" in doc:
        job["defaults"] = {"virtualCluster": doc["vc"]}
    extras: dict[str, Any] = {}
    if "gang" in doc:
        extras["gangAllocation"] = doc["gang"]
    if "storages" in doc:
        extras["storages"] = [
            {"name": s} if isinstance(s, str) else s for s in doc["storages"] or []
        ]
    if extras:
        job["extras"] = extras
    for key in ("parameters", "secrets", "description"):
        if key in doc:
            job[key] = doc[key]
    if "retries" in doc:
        job["jobRetryCount"] = doc["retries"]
    for key, value in doc.items():
        if key not in SHORT_KEYS:
            job[key] = value
    return job
