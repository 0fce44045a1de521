"""The objects a fresh test cluster is filled with: users' namespaces and RBAC, the
virtual clusters (priority classes and quotas for the `native` flavor, Volcano Queues
for `volcano`), and simulated nodes. Plain dicts, so the
same builders serve `up`, the fixture and the tests."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from . import helm

Manifest = dict[str, Any]

# kwok manages (heartbeats, serves logs for) every node carrying this annotation.
KWOK_NODE_ANNOTATION = {"kwok.x-k8s.io/node": "fake"}
POOL_LABEL = "jupyter-pai.test/pool"
RUNNER_LABEL = "jupyter-pai.test/runner"
GPU_RESOURCE = "nvidia.com/gpu"

USERS = ("alice", "bob")
# Virtual clusters: a PriorityClass names the VC a pod runs in; a ResourceQuota scoped
# to that class in each namespace caps the VC's GPUs (None = no cap).
VIRTUAL_CLUSTERS: dict[str, int | None] = {"default": None, "research": 8}
VC_PRIORITY_PREFIX = "vc-"
NAMESPACES = ("default", *USERS)


# NVIDIA GPU Feature Discovery's labels of an 8-GPU A100-40GB and H100-80GB node: what
# GPU types are read from (jupyter_pai.backends.gputypes).
A100_40GB = {
    "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB",
    "nvidia.com/gpu.memory": "40960",
    "nvidia.com/gpu.count": "8",
    "nvidia.com/gpu.family": "ampere",
}
H100_80GB = {
    "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
    "nvidia.com/gpu.memory": "81559",
    "nvidia.com/gpu.count": "8",
    "nvidia.com/gpu.family": "hopper",
}


@dataclass(frozen=True)
class NodeShape:
    """A pool of simulated nodes of the same size.

    ``labels``: on every node; ``node_labels``: per node, the pool split evenly among them
    in order (two entries over 4 nodes: the first two get the first); ``extended``: more
    allocatable resources (``{"nvidia.com/mig-1g.5gb": "7"}``)."""

    pool: str
    count: int
    gpus: int
    cpu: str = "64"
    memory: str = "512Gi"
    labels: dict[str, str] = field(default_factory=dict)
    node_labels: tuple[dict[str, str], ...] = ()
    extended: dict[str, str] = field(default_factory=dict)

    def names(self) -> list[str]:
        return [f"{self.pool}-{i}" for i in range(self.count)]

    def labels_of(self, index: int) -> dict[str, str]:
        if not self.node_labels:
            return dict(self.labels)
        per = self.node_labels[index * len(self.node_labels) // max(self.count, 1)]
        return {**self.labels, **per}


#: gpu-0, gpu-1 are A100-40GB nodes, gpu-2, gpu-3 H100-80GB ones.
DEFAULT_GPU_POOL = NodeShape(pool="gpu", count=4, gpus=8, node_labels=(A100_40GB, H100_80GB))
DEFAULT_RUNNER_POOL = NodeShape(pool="runner", count=1, gpus=4, cpu="16", memory="64Gi")


def nodes(shape: NodeShape, *, runner: bool = False) -> list[Manifest]:
    """Every node of a pool."""
    return [node(name, shape, runner=runner, index=i) for i, name in enumerate(shape.names())]


def node(name: str, shape: NodeShape, *, runner: bool = False, index: int = 0) -> Manifest:
    capacity = {"cpu": shape.cpu, "memory": shape.memory, "pods": "110"}
    if shape.gpus:
        capacity[GPU_RESOURCE] = str(shape.gpus)
    capacity.update(shape.extended)
    labels = {
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "type": "kwok",
        POOL_LABEL: shape.pool,
        **shape.labels_of(index),
    }
    if runner:
        labels[RUNNER_LABEL] = "true"
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels, "annotations": dict(KWOK_NODE_ANNOTATION)},
        "spec": {},
        "status": {"capacity": capacity, "allocatable": dict(capacity)},
    }


#: The users' namespaces enforce Pod Security at jupyter-pai's default level, as the hub
#: makes them (jupyter_pai.hub.objects): every flow the tests run meets it.
POD_SECURITY_LEVEL = "baseline"


def pod_security_labels(level: str = POD_SECURITY_LEVEL) -> dict[str, str]:
    return {f"pod-security.kubernetes.io/{mode}": level for mode in ("enforce", "warn", "audit")}


def namespace(name: str, labels: dict[str, str] | None = None) -> Manifest:
    meta: Manifest = {"name": name, **({"labels": labels} if labels else {})}
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": meta}


def vc_priority_class(vc: str) -> Manifest:
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": VC_PRIORITY_PREFIX + vc},
        "value": 0,
        "preemptionPolicy": "Never",
        "globalDefault": False,
        "description": f"virtual cluster {vc}",
    }


def vc_quota(vc: str, gpus: int, ns: str) -> Manifest:
    return {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": VC_PRIORITY_PREFIX + vc, "namespace": ns},
        "spec": {
            "hard": {f"requests.{GPU_RESOURCE}": str(gpus)},
            "scopeSelector": {
                "matchExpressions": [
                    {
                        "scopeName": "PriorityClass",
                        "operator": "In",
                        "values": [VC_PRIORITY_PREFIX + vc],
                    }
                ]
            },
        },
    }


def vc_queue(vc: str, gpus: int | None) -> Manifest:
    """The Volcano Queue of a virtual cluster: the same name, its GPU cap as
    `capability` (other resources uncapped), lending what it does not use."""
    spec: dict[str, Any] = {"reclaimable": True, "weight": 1}
    if gpus is not None:
        spec["capability"] = {GPU_RESOURCE: str(gpus)}
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": vc},
        "spec": spec,
    }


def volcano_queues() -> list[Manifest]:
    return [vc_queue(vc, gpus) for vc, gpus in VIRTUAL_CLUSTERS.items()]


_ALL = ["get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"]
_READ = ["get", "list", "watch"]

# What tests do as alice or bob themselves besides the backend (make claims, read and change
# objects directly, exec): `up` grants the part of it that the chart's roles do not, as
# jupyter-pai-test-harness. The backend needs nothing beyond the chart's roles
# (tests/deploy/test_least_privilege.py runs it with those alone).
HARNESS_RULES: list[Manifest] = [
    {
        "apiGroups": [""],
        "resources": [
            "pods",
            "pods/log",
            "pods/portforward",
            "pods/exec",
            "services",
            "endpoints",
            "configmaps",
            "secrets",
            "events",
            "persistentvolumeclaims",
        ],
        "verbs": _ALL,
    },
    {"apiGroups": [""], "resources": ["resourcequotas", "serviceaccounts"], "verbs": _READ},
    {"apiGroups": ["batch"], "resources": ["jobs", "jobs/status"], "verbs": _ALL},
    {"apiGroups": ["events.k8s.io"], "resources": ["events"], "verbs": _READ},
    {
        "apiGroups": ["scheduling.k8s.io"],
        "resources": ["workloads", "podgroups", "podgroups/status"],
        "verbs": _ALL,
    },
    {"apiGroups": ["discovery.k8s.io"], "resources": ["endpointslices"], "verbs": _READ},
    # Volcano (the `volcano` flavor): vcjobs and the bus Commands that stop them are
    # the user's; PodGroups are the controller's, read only.
    {"apiGroups": ["batch.volcano.sh"], "resources": ["jobs", "jobs/status"], "verbs": _ALL},
    {"apiGroups": ["bus.volcano.sh"], "resources": ["commands"], "verbs": _ALL},
    {"apiGroups": ["scheduling.volcano.sh"], "resources": ["podgroups"], "verbs": _READ},
    # Kueue (the `kueue` flavor): JobSets are the user's; Workloads are Kueue's, one
    # per JobSet: the user may deactivate theirs (a stop); LocalQueues read only.
    {"apiGroups": ["jobset.x-k8s.io"], "resources": ["jobsets"], "verbs": _ALL},
    {"apiGroups": ["kueue.x-k8s.io"], "resources": ["workloads"], "verbs": [*_READ, "patch"]},
    {"apiGroups": ["kueue.x-k8s.io"], "resources": ["localqueues"], "verbs": _READ},
]

HARNESS_CLUSTER_RULES: list[Manifest] = [
    {"apiGroups": [""], "resources": ["nodes"], "verbs": _READ},
    {"apiGroups": ["scheduling.k8s.io"], "resources": ["priorityclasses"], "verbs": _READ},
    {"apiGroups": ["scheduling.volcano.sh"], "resources": ["queues"], "verbs": _READ},
    {
        "apiGroups": ["kueue.x-k8s.io"],
        "resources": ["clusterqueues", "resourceflavors", "cohorts"],
        "verbs": _READ,
    },
]


def _less(rules: list[Manifest], granted: list[Manifest]) -> list[Manifest]:
    """``rules`` less what ``granted`` gives, one rule per API group and resource."""
    have = {
        (g, r, v)
        for rule in granted
        for g in rule["apiGroups"]
        for r in rule["resources"]
        for v in rule["verbs"]
    }
    out = []
    for rule in rules:
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                verbs = [v for v in rule["verbs"] if (group, resource, v) not in have]
                if verbs:
                    out.append({"apiGroups": [group], "resources": [resource], "verbs": verbs})
    return out


def user_roles() -> list[Manifest]:
    """The chart's jupyter-pai-user and jupyter-pai-cluster-reader (`helm template`, every
    flavor's rules merged: this cluster serves all four at once), and the harness's roles
    with what the tests need beyond them."""
    user, reader = helm.chart_user_roles()
    harness = [
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": name},
            "rules": _less(rules, chart["rules"]),
        }
        for name, rules, chart in (
            (HARNESS_ROLE, HARNESS_RULES, user),
            (f"{HARNESS_ROLE}-cluster", HARNESS_CLUSTER_RULES, reader),
        )
    ]
    return [user, reader, *harness]


HARNESS_ROLE = "jupyter-pai-test-harness"


def _binding(kind: str, name: str, role: str, namespace: str | None, user: str) -> Manifest:
    meta: Manifest = {"name": name, **({"namespace": namespace} if namespace else {})}
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": kind,
        "metadata": meta,
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": [{"kind": "User", "name": user, "apiGroup": "rbac.authorization.k8s.io"}],
    }


def user_bindings(user: str) -> list[Manifest]:
    subject = [{"kind": "User", "name": user, "apiGroup": "rbac.authorization.k8s.io"}]
    return [
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": "jupyter-pai-user", "namespace": user},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": "jupyter-pai-user",
            },
            "subjects": subject,
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": f"jupyter-pai-cluster-reader-{user}"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": "jupyter-pai-cluster-reader",
            },
            "subjects": subject,
        },
    ]


def cluster_objects() -> list[Manifest]:
    """Everything `up` creates before nodes: namespaces, VCs and users' rights."""
    objects: list[Manifest] = [namespace(ns, pod_security_labels()) for ns in USERS]
    objects += [vc_priority_class(vc) for vc in VIRTUAL_CLUSTERS]
    for vc, gpus in VIRTUAL_CLUSTERS.items():
        if gpus is not None:
            objects += [vc_quota(vc, gpus, ns) for ns in NAMESPACES]
    objects += user_roles()
    for user in USERS:
        objects += user_bindings(user)
        objects += [
            _binding("RoleBinding", HARNESS_ROLE, HARNESS_ROLE, user, user),
            _binding(
                "ClusterRoleBinding",
                f"{HARNESS_ROLE}-cluster-{user}",
                f"{HARNESS_ROLE}-cluster",
                None,
                user,
            ),
        ]
    return objects
