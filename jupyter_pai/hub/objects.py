"""What a JupyterHub user gets on Kubernetes, as plain manifests: a namespace of their
own (the isolation: RBAC confines their server's service account to it, Pod Security
admission keeps their pods off the node's host, a NetworkPolicy keeps other namespaces'
pods off theirs), that service account with the user role there and the cluster reader
role, a Kueue LocalQueue per virtual cluster they may use (the ``kueue`` flavor), and what
their server's pod needs (the namespace and flavor, the admin's server configuration).
Pure functions: the KubeSpawner hooks (:mod:`.hooks`) only send these."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

Manifest = dict[str, Any]

MANAGED_LABEL = "jupyter-pai/managed"
USER_LABEL = "jupyter-pai/user"
#: ``jupyter-pai/vc.<vc>: "true"`` on a namespace for each VC its user may submit to.
VC_LABEL_PREFIX = "jupyter-pai/vc."
#: The raw JupyterHub name (a label value cannot hold every name, e.g. ``a@b.org``).
USER_ANNOTATION = "jupyter-pai/user"
SERVICE_ACCOUNT = "jupyter-pai"
FLAVORS = ("native", "volcano", "kueue", "hived")
#: Where the admin's ConfigMap is mounted: a configuration folder of its own, put on the
#: server's JUPYTER_CONFIG_PATH, whose ``jupyter_server_config.json`` Jupyter Server reads
#: (from a ``jupyter_server_config.d`` folder it would read only which extensions are on).
SERVER_CONFIG_DIR = "/etc/jupyter-pai"
SERVER_CONFIG_FILE = "jupyter_server_config.json"
CONFIG_VOLUME = "jupyter-pai-config"
KUEUE_API = "kueue.x-k8s.io/v1beta2"
RBAC_API = "rbac.authorization.k8s.io/v1"
NETWORKING_API = "networking.k8s.io/v1"
#: The API server's own PodSecurity admission reads these labels of a namespace.
POD_SECURITY_LABEL = "pod-security.kubernetes.io/"
#: Levels a user namespace may have: ``baseline`` (the default: images run as their own
#: user, root included, with the container runtime's default capabilities) or
#: ``restricted`` (non-root, no capabilities; what an image must allow). Never
#: ``privileged``: a user who may create pods would get root on a node.
POD_SECURITY_LEVELS = ("baseline", "restricted")
#: The NetworkPolicy that lets into a user's pods only their own namespace's pods and the
#: peers the admin names (the hub's namespace: its proxy reaches the user's server).
NETWORK_POLICY = "jupyter-pai-ingress"
#: Names a user's namespace never takes: Kubernetes' own (and its ``kube-`` prefix).
RESERVED_NAMESPACES = frozenset({"default", "kube-system", "kube-public", "kube-node-lease"})

_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_LABEL_VALUE = re.compile(r"([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?")


@dataclass(frozen=True)
class HubSettings:
    """``configure_kubespawner``'s arguments, checked once when the hub loads its config."""

    flavor: str
    vc_groups: Mapping[str, list[str]] = field(default_factory=dict)
    open_vcs: tuple[str, ...] = ("default",)
    user_role: str = "jupyter-pai-user"
    cluster_reader_role: str = "jupyter-pai-cluster-reader"
    namespace_prefix: str = ""
    config_map: str | None = "jupyter-pai-config"
    pod_security: str = "baseline"
    #: Further NetworkPolicy peers (``from`` entries) allowed into the users' pods, besides
    #: their own namespace and the hub's; None: no NetworkPolicy is made at all.
    ingress_from: tuple[Manifest, ...] | None = ()

    def __post_init__(self) -> None:
        if self.flavor not in FLAVORS:
            raise ValueError(f"flavor is {self.flavor!r}; choose one of {', '.join(FLAVORS)}")
        if self.pod_security not in POD_SECURITY_LEVELS:
            raise ValueError(
                f"pod_security is {self.pod_security!r}; choose baseline or restricted (a "
                "privileged namespace would let every user run pods with root on the node)"
            )
        for i, peer in enumerate(self.ingress_from or ()):
            if not isinstance(peer, Mapping) or not (
                set(peer) and set(peer) <= {"namespaceSelector", "podSelector", "ipBlock"}
            ):
                raise ValueError(
                    f"ingress_from[{i}] must be a NetworkPolicy peer: a map of "
                    f"namespaceSelector, podSelector or ipBlock, not {peer!r}"
                )
        for group, vcs in self.vc_groups.items():
            if isinstance(vcs, str) or not all(isinstance(v, str) for v in vcs):
                raise ValueError(f"vc_groups[{group!r}] must be a list of VC names, not {vcs!r}")
            for vc in vcs:
                _check_vc(vc, f"vc_groups[{group!r}]")
        for vc in self.open_vcs:
            _check_vc(vc, "open_vcs")
        for name, value in (
            ("user_role", self.user_role),
            ("cluster_reader_role", self.cluster_reader_role),
        ):
            if not value:
                raise ValueError(f"{name} must name a ClusterRole")
        if self.namespace_prefix and not re.fullmatch(r"[a-z0-9][-a-z0-9]*", self.namespace_prefix):
            raise ValueError(
                f"namespace_prefix {self.namespace_prefix!r} must be lowercase letters, "
                "digits and '-', starting with a letter or digit"
            )
        if self.config_map is not None and not _DNS_LABEL.fullmatch(self.config_map):
            raise ValueError(f"config_map {self.config_map!r} is no ConfigMap name")


def _check_vc(vc: str, where: str) -> None:
    # A VC is a LocalQueue / PriorityClass suffix and a label name part: a DNS label.
    if not _DNS_LABEL.fullmatch(vc) or len(vc) > 50:
        raise ValueError(f"{where}: {vc!r} is no virtual cluster name (a DNS label)")


def allowed_vcs(settings: HubSettings, groups: Iterable[str]) -> list[str]:
    """The VCs a user may submit to: the open ones and those of their groups."""
    vcs = set(settings.open_vcs)
    for group in groups:
        vcs.update(settings.vc_groups.get(group, []))
    return sorted(vcs)


def namespace_name(settings: HubSettings, username: str) -> str:
    """``<prefix><username>`` where the name is a DNS label already (KubeSpawner's own
    template gives the namespace otherwise: see :func:`.hooks.user_namespace`)."""
    name = settings.namespace_prefix + username
    if not _DNS_LABEL.fullmatch(name) or len(name) > 63:
        raise ValueError(f"user {username!r}: {name!r} is no namespace name")
    return name


def reserved_namespace(name: str, hub_namespace: str) -> str | None:
    """Why a user's namespace may not be ``name`` (a system one, the hub's own), or None."""
    if name in RESERVED_NAMESPACES or name.startswith("kube-"):
        return f"{name!r} is one of Kubernetes' own namespaces"
    if name == hub_namespace:
        return f"{name!r} is the hub's own namespace"
    return None


def made_for(meta: Any, username: str) -> bool:
    """Whether a namespace's metadata says the hub made it for ``username``: a namespace
    that exists otherwise (an admin's, a system one, another user's) is never taken over."""
    labels = getattr(meta, "labels", None) or {}
    annotations = getattr(meta, "annotations", None) or {}
    return labels.get(MANAGED_LABEL) == "true" and annotations.get(USER_ANNOTATION) == username


def user_label(username: str) -> str:
    """The user's name as a label value; a name no label can hold is shortened and given
    a digest (the annotation keeps it whole)."""
    if len(username) <= 63 and _LABEL_VALUE.fullmatch(username):
        return username
    digest = hashlib.sha256(username.encode()).hexdigest()[:8]
    cleaned = re.sub(r"[^A-Za-z0-9_.-]+", "-", username).strip("-_.")[:54]
    return f"{cleaned}-{digest}" if cleaned else digest


def pod_security_labels(level: str) -> dict[str, str]:
    """PodSecurity admission at ``level``: enforced (a pod that breaks it is refused, whoever
    creates it: the user, Volcano's or the Job controller), and warned and audited alike."""
    labels = {}
    for mode in ("enforce", "warn", "audit"):
        labels[f"{POD_SECURITY_LABEL}{mode}"] = level
        labels[f"{POD_SECURITY_LABEL}{mode}-version"] = "latest"
    return labels


def namespace_labels(settings: HubSettings, username: str, vcs: Iterable[str]) -> dict[str, str]:
    labels = {MANAGED_LABEL: "true", USER_LABEL: user_label(username)}
    labels.update(pod_security_labels(settings.pod_security))
    labels.update({VC_LABEL_PREFIX + vc: "true" for vc in vcs})
    return labels


def namespace(settings: HubSettings, username: str, name: str, vcs: Iterable[str]) -> Manifest:
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {
            "name": name,
            "labels": namespace_labels(settings, username, vcs),
            "annotations": {USER_ANNOTATION: username},
        },
    }


def label_patch(
    settings: HubSettings, current: Mapping[str, str], username: str, vcs: Iterable[str]
) -> dict[str, Any]:
    """A merge patch of the namespace's labels: ours set, VC labels no longer allowed
    removed (``None``), anyone else's left alone."""
    wanted: dict[str, Any] = dict(namespace_labels(settings, username, vcs))
    for key in current:
        if key.startswith(VC_LABEL_PREFIX) and key not in wanted:
            wanted[key] = None
    return {"metadata": {"labels": wanted, "annotations": {USER_ANNOTATION: username}}}


def changes(
    patch: Mapping[str, Any], labels: Mapping[str, str], annotations: Mapping[str, str]
) -> bool:
    """Whether ``label_patch``'s patch would change a namespace that has these."""
    meta = patch["metadata"]
    return any(labels.get(k) != v for k, v in meta["labels"].items()) or any(
        annotations.get(k) != v for k, v in meta["annotations"].items()
    )


def service_account(namespace: str) -> Manifest:
    return {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": SERVICE_ACCOUNT, "namespace": namespace, "labels": _managed()},
    }


def _subjects(namespace: str) -> list[Manifest]:
    return [{"kind": "ServiceAccount", "name": SERVICE_ACCOUNT, "namespace": namespace}]


#: The bindings of the user's server account: names of their own, so that bindings an
#: admin made in the namespace (say of a person to jupyter-pai-user) are never touched.
SERVER_BINDING = "jupyter-pai-server"


def role_binding(settings: HubSettings, namespace: str) -> Manifest:
    return {
        "apiVersion": RBAC_API,
        "kind": "RoleBinding",
        "metadata": {"name": SERVER_BINDING, "namespace": namespace, "labels": _managed()},
        "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "ClusterRole",
            "name": settings.user_role,
        },
        "subjects": _subjects(namespace),
    }


def cluster_role_binding(settings: HubSettings, namespace: str) -> Manifest:
    return {
        "apiVersion": RBAC_API,
        "kind": "ClusterRoleBinding",
        "metadata": {"name": f"{SERVER_BINDING}-{namespace}", "labels": _managed()},
        "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "ClusterRole",
            "name": settings.cluster_reader_role,
        },
        "subjects": _subjects(namespace),
    }


def network_policy(settings: HubSettings, namespace: str, hub_namespace: str) -> Manifest | None:
    """Ingress into the user's pods from their own namespace's pods, the hub's namespace
    (its proxy and the hub reach the user's server) and the peers the admin names; from
    nowhere else, so another user's pod cannot reach a TensorBoard, a TCPStore or an sshd
    around the signed links. Egress is left open (the API server, registries, storage)."""
    if settings.ingress_from is None:
        return None
    peers: list[Manifest] = [
        {"podSelector": {}},
        {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": hub_namespace}}},
        *(dict(p) for p in settings.ingress_from),
    ]
    return {
        "apiVersion": NETWORKING_API,
        "kind": "NetworkPolicy",
        "metadata": {"name": NETWORK_POLICY, "namespace": namespace, "labels": _managed()},
        "spec": {"podSelector": {}, "policyTypes": ["Ingress"], "ingress": [{"from": peers}]},
    }


def local_queues(settings: HubSettings, namespace: str, vcs: Iterable[str]) -> list[Manifest]:
    """One LocalQueue per VC, named as the VC and pointing at the ClusterQueue of that
    name (the kueue flavor reads a VC as the LocalQueue of its name); none for the other
    flavors."""
    if settings.flavor != "kueue":
        return []
    return [
        {
            "apiVersion": KUEUE_API,
            "kind": "LocalQueue",
            "metadata": {"name": vc, "namespace": namespace, "labels": _managed()},
            "spec": {"clusterQueue": vc},
        }
        for vc in vcs
    ]


def config_copy(settings: HubSettings, namespace: str, data: Mapping[str, str]) -> Manifest | None:
    """The admin's ConfigMap, copied into the user's namespace (a pod mounts ConfigMaps of
    its own namespace only)."""
    if settings.config_map is None:
        return None
    if SERVER_CONFIG_FILE not in data:
        raise ValueError(
            f"ConfigMap {settings.config_map!r} has no key {SERVER_CONFIG_FILE!r} (what "
            f"Jupyter Server reads from {SERVER_CONFIG_DIR})"
        )
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": settings.config_map, "namespace": namespace, "labels": _managed()},
        "data": dict(data),
    }


def user_objects(
    settings: HubSettings, username: str, namespace_: str, vcs: list[str]
) -> list[Manifest]:
    """Everything the pre-spawn hook makes sure exists, in the order it is created."""
    return [
        namespace(settings, username, namespace_, vcs),
        service_account(namespace_),
        role_binding(settings, namespace_),
        cluster_role_binding(settings, namespace_),
        *local_queues(settings, namespace_, vcs),
    ]


def server_env(settings: HubSettings, namespace: str, vcs: list[str]) -> dict[str, str]:
    """The user server's backend: Kubernetes of this flavor in the user's namespace, with
    the pod's in-cluster credentials (no kubeconfig), offering the VCs the user may use
    (the cluster enforces the same list: namespace labels, LocalQueues)."""
    return {
        "JUPYTER_PAI_BACKEND": "kubernetes",
        "JUPYTER_PAI_FLAVOR": settings.flavor,
        "JUPYTER_PAI_NAMESPACE": namespace,
        "JUPYTER_PAI_VIRTUAL_CLUSTERS": ",".join(vcs),
        # Pods the server makes meet the namespace's level (see namespace_labels).
        "JUPYTER_PAI_POD_SECURITY": settings.pod_security,
        **({"JUPYTER_CONFIG_PATH": SERVER_CONFIG_DIR} if settings.config_map else {}),
    }


def config_volume(settings: HubSettings) -> tuple[Manifest, Manifest] | None:
    """(volume, volumeMount) putting the ConfigMap's files where Jupyter Server reads its
    configuration (a folder mount, so an edited ConfigMap reaches the next server start)."""
    if settings.config_map is None:
        return None
    volume = {"name": CONFIG_VOLUME, "configMap": {"name": settings.config_map}}
    mount = {"name": CONFIG_VOLUME, "mountPath": SERVER_CONFIG_DIR, "readOnly": True}
    return volume, mount


def _managed() -> dict[str, str]:
    return {MANAGED_LABEL: "true"}
