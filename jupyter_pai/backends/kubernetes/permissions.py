"""What the Kubernetes backend asks of the API server, per scheduler flavor: the one list
the Helm chart's ClusterRoles, ``jupyter pai check`` and the test cluster's roles come from.

Every entry is a call the backend really makes (audited from the REST calls in this
package): a reflector's list and watch, a create, patch or delete, a pod's log or
port-forward. Nothing is granted "in case": a verb added here widens every user's rights,
so it needs a caller in the code."""

from __future__ import annotations

from dataclasses import dataclass

FLAVORS = ("native", "volcano", "kueue", "hived")


@dataclass(frozen=True)
class Permission:
    group: str  # API group, "" for core
    resource: str  # e.g. "pods", "pods/log", "pods/portforward", "queues"
    verb: str  # one verb per entry
    cluster: bool  # True: cluster-scoped read; False: in the user's namespace
    why: str  # what the user loses without it, in words


def _grant(
    group: str, resource: str, verbs: str, why: str, *, cluster: bool = False
) -> list[Permission]:
    return [Permission(group, resource, verb, cluster, why) for verb in verbs.split()]


def _primary(group: str, resource: str, what: str) -> list[Permission]:
    """The object holding a job's spec (its ``primary_kind``)."""
    return [
        *_grant(group, resource, "create", f"submit a job (its {what})"),
        *_grant(group, resource, "list watch", "list jobs and follow their states"),
        *_grant(group, resource, "patch", "stop a job, and record how a job ended (annotations)"),
        *_grant(group, resource, "delete", "delete an ended job (and undo a failed submission)"),
    ]


def _common(*, service: bool) -> list[Permission]:
    """What every flavor uses: tasks' pods, logs, port-forwards, storages, kept logs, the
    job's Secret and (``service``: unless the workload's controller makes it) Service."""
    out = [
        *_grant("", "pods", "list watch", "see a job's tasks (state, node, IP, exit code)"),
        *_grant("", "pods", "create", "browse a storage (a short-lived helper pod mounts it)"),
        *_grant("", "pods", "get", "browse a storage (wait for its helper pod to start)"),
        *_grant(
            "", "pods", "delete", "stop idle storage helper pods, and those a killed server left"
        ),
        *_grant("", "pods/log", "get", "read and follow a task's log"),
        # WebSocket clients open a port-forward with GET, and the API server (v1.36) checks
        # create on the upgrade as well: both are needed (tests/deploy/test_least_privilege).
        *_grant(
            "",
            "pods/portforward",
            "create get",
            "connect to a task's ports (remote kernels, TensorBoard) and to storage helpers",
        ),
        *_grant("", "events", "list watch", "see why a job waits or its tasks failed"),
        *_grant("", "persistentvolumeclaims", "list watch", "list the storages a job may mount"),
        *_grant("", "configmaps", "create", "keep the log of a task evicted before it ended"),
        *_grant("", "configmaps", "get", "read the kept log of an evicted attempt"),
        *_grant("", "configmaps", "list watch", "list the kept logs of evicted attempts"),
        *_grant("", "secrets", "create", "submit a job with secrets or an ssh key pair"),
        *_grant("", "secrets", "get", "blank a job's secret values in its logs"),
        *_grant(
            "", "secrets", "list", "clean up after a submission a killed server left half done"
        ),
        *_grant("", "secrets", "delete", "clean up after a failed or interrupted submission"),
        *_grant(
            "", "services", "list", "clean up after a submission a killed server left half done"
        ),
        *_grant("", "nodes", "list", "see the cluster's GPUs and nodes", cluster=True),
    ]
    if service:
        out += [
            *_grant("", "services", "create", "let a job's tasks reach each other by host name"),
            *_grant("", "services", "delete", "clean up after a failed or interrupted submission"),
        ]
    return out


def _owner_patches(resources: list[str]) -> list[Permission]:
    """Objects created before the primary get it as owner afterwards (a patch), so they
    go with the job."""
    return [
        p
        for resource in resources
        for p in _grant("", resource, "patch", "make a job's Secret and Service go with the job")
    ]


def _native() -> list[Permission]:
    return [
        *_common(service=True),
        *_primary("", "configmaps", "ConfigMap"),
        *_grant("batch", "jobs", "create", "submit a job (a Job per task role)"),
        *_grant("batch", "jobs", "list watch", "see a job's task roles"),
        *_grant("batch", "jobs", "patch", "stop a job (suspend its Jobs)"),
        *_grant("batch", "jobs", "delete", "undo a failed submission"),
        *_grant("scheduling.k8s.io", "podgroups", "create", "submit a gang-scheduled job"),
        *_grant("scheduling.k8s.io", "podgroups", "list watch", "see why a gang waits"),
        *_grant("scheduling.k8s.io", "podgroups", "delete", "undo a failed submission"),
        *_grant("", "pods", "deletecollection", "stop a job (its pods that are left)"),
        *_grant("", "resourcequotas", "list watch", "see a virtual cluster's quota and use"),
        *_grant(
            "scheduling.k8s.io",
            "priorityclasses",
            "list watch",
            "list the virtual clusters (a priority class each)",
            cluster=True,
        ),
    ]


def _volcano() -> list[Permission]:
    return [
        *_common(service=True),
        *_primary("batch.volcano.sh", "jobs", "Volcano Job"),
        *_owner_patches(["secrets", "services"]),
        *_grant(
            "bus.volcano.sh",
            "commands",
            "create",
            "stop a job, end it by its policy, or prompt Volcano about a job it missed",
        ),
        *_grant("scheduling.volcano.sh", "podgroups", "list watch", "see why a gang waits"),
        *_grant(
            "scheduling.volcano.sh",
            "queues",
            "list watch",
            "list the virtual clusters (a queue each) and their use",
            cluster=True,
        ),
    ]


def _kueue() -> list[Permission]:
    return [
        *_common(service=False),
        *_primary("jobset.x-k8s.io", "jobsets", "JobSet"),
        *_owner_patches(["secrets"]),
        *_grant("kueue.x-k8s.io", "workloads", "list watch", "see why a job waits or was evicted"),
        *_grant("kueue.x-k8s.io", "workloads", "patch", "stop a job (deactivate its Workload)"),
        *_grant(
            "kueue.x-k8s.io", "localqueues", "list watch", "list the virtual clusters (LocalQueues)"
        ),
        *_grant(
            "kueue.x-k8s.io",
            "clusterqueues",
            "list watch",
            "see a virtual cluster's quota and use (its ClusterQueue)",
            cluster=True,
        ),
    ]


def _hived() -> list[Permission]:
    # HiveD's virtual clusters come from its own web server, not the API server.
    return [
        *_common(service=True),
        *_primary("", "configmaps", "ConfigMap"),
        *_grant("", "pods", "create", "submit a job (HiveD's tasks are pods)"),
        *_grant(
            "",
            "pods",
            "deletecollection",
            "stop a job, end it by its policy, or prompt Volcano about a job it missed",
        ),
    ]


_BUILDERS = {"native": _native, "volcano": _volcano, "kueue": _kueue, "hived": _hived}


def required(flavor: str) -> list[Permission]:
    """Every permission the backend of ``flavor`` uses, one verb per entry, sorted; where
    two calls need the same verb its reasons are joined."""
    if flavor not in _BUILDERS:
        raise ValueError(f"flavor: must be one of {', '.join(FLAVORS)}, not {flavor!r}")
    merged: dict[tuple[str, str, str, bool], list[str]] = {}
    for p in _BUILDERS[flavor]():
        whys = merged.setdefault((p.group, p.resource, p.verb, p.cluster), [])
        if p.why not in whys:
            whys.append(p.why)
    return [Permission(*key, why="; ".join(whys)) for key, whys in sorted(merged.items())]


def policy_rules(permissions: list[Permission]) -> list[dict[str, list[str]]]:
    """RBAC PolicyRules granting exactly ``permissions`` (one rule per group and resource),
    in a stable order."""
    verbs: dict[tuple[str, str], list[str]] = {}
    for p in permissions:
        found = verbs.setdefault((p.group, p.resource), [])
        if p.verb not in found:
            found.append(p.verb)
    return [
        {"apiGroups": [group], "resources": [resource], "verbs": sorted(vs)}
        for (group, resource), vs in sorted(verbs.items())
    ]
