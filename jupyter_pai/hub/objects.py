"""What a JupyterHub user gets on Kubernetes, as plain manifests: a namespace of their
own (the isolation: RBAC confines their server's service account to it), that service
account with the user role there and the cluster reader role, a Kueue LocalQueue per
virtual cluster they may use (the ``kueue`` flavor), and what their server's pod needs
(the namespace and flavor, the admin's server configuration). Pure functions: the
KubeSpawner hooks (:mod:`.hooks`) only send these."""

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

    def __post_init__(self) -> None:
        if self.flavor not in FLAVORS:
            raise ValueError(f"flavor is {self.flavor!r}; choose one of {', '.join(FLAVORS)}")
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


def user_label(username: str) -> str:
    """The user's name as a label value; a name no label can hold is shortened and given
    a digest (the annotation keeps it whole)."""
    if len(username) <= 63 and _LABEL_VALUE.fullmatch(username):
        return username
    digest = hashlib.sha256(username.encode()).hexdigest()[:8]
    cleaned = re.sub(r"[^A-Za-z0-9_.-]+", "-", username).strip("-_.")[:54]
    return f"{cleaned}-{digest}" if cleaned else digest


def namespace_labels(username: str, vcs: Iterable[str]) -> dict[str, str]:
    labels = {MANAGED_LABEL: "true", USER_LABEL: user_label(username)}
    labels.update({VC_LABEL_PREFIX + vc: "true" for vc in vcs})
    return labels


def namespace(username: str, name: str, vcs: Iterable[str]) -> Manifest:
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {
            "name": name,
            "labels": namespace_labels(username, vcs),
            "annotations": {USER_ANNOTATION: username},
        },
    }


def label_patch(current: Mapping[str, str], username: str, vcs: Iterable[str]) -> dict[str, Any]:
    """A merge patch of the namespace's labels: ours set, VC labels no longer allowed
    removed (``None``), anyone else's left alone."""
    wanted: dict[str, Any] = dict(namespace_labels(username, vcs))
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
        namespace(username, namespace_, vcs),
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
