"""What a JupyterHub user gets (jupyter_pai.hub.objects), against golden files, and how
bad helper arguments are refused."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from traitlets.config import Config

from jupyter_pai.hub import configure_kubespawner, hooks, objects
from jupyter_pai.hub.objects import HubSettings
from tests.golden import check_golden

GOLDEN = Path(__file__).parent / "golden" / "hub"
SETTINGS = HubSettings(
    flavor="kueue",
    vc_groups={"researchers": ["research"], "vision": ["vision", "research"]},
    namespace_prefix="pai-",
)


def dump(data: Any) -> str:
    return json.dumps(data, indent=2, sort_keys=True) + "\n"


@pytest.mark.parametrize("flavor", ["kueue", "volcano"])
def test_user_objects(flavor: str) -> None:
    settings = HubSettings(
        flavor=flavor, vc_groups=dict(SETTINGS.vc_groups), namespace_prefix="pai-"
    )
    vcs = objects.allowed_vcs(settings, ["researchers", "unrelated"])
    assert vcs == ["default", "research"]
    ns = objects.namespace_name(settings, "carol")
    made = {
        "objects": objects.user_objects(settings, "carol", ns, vcs),
        "server_env": objects.server_env(settings, ns, vcs),
        "config": objects.config_copy(settings, ns, {"jupyter_server_config.json": "{}"}),
        "config_volume": objects.config_volume(settings),
        "network_policy": objects.network_policy(settings, ns, "jhub"),
    }
    check_golden(GOLDEN / f"carol.{flavor}.json", dump(made), json.loads)


def test_group_removed_drops_its_label() -> None:
    current = {
        "jupyter-pai/managed": "true",
        "jupyter-pai/user": "carol",
        "jupyter-pai/vc.research": "true",
        "jupyter-pai/vc.default": "true",
        **objects.pod_security_labels("baseline"),
        "team": "kept",
    }
    patch = objects.label_patch(SETTINGS, current, "carol", objects.allowed_vcs(SETTINGS, []))
    check_golden(GOLDEN / "label-patch.json", dump(patch), json.loads)
    assert patch["metadata"]["labels"]["jupyter-pai/vc.research"] is None
    assert "team" not in patch["metadata"]["labels"]
    assert objects.changes(patch, current, {"jupyter-pai/user": "carol"})
    settled = {k: v for k, v in current.items() if k != "jupyter-pai/vc.research"}
    assert not objects.changes(patch, settled, {"jupyter-pai/user": "carol"})


def test_a_config_map_without_json_is_refused() -> None:
    with pytest.raises(
        ValueError, match=r"ConfigMap 'jupyter-pai-config' has no key 'jupyter_server_config\.json'"
    ):
        objects.config_copy(SETTINGS, "pai-carol", {"notes.txt": "hi"})


def test_names_no_label_can_hold() -> None:
    label = objects.user_label("Carol Smith@example.org")
    assert label == "Carol-Smith-example.org-" + label.rsplit("-", 1)[1]
    assert len(objects.user_label("x" * 80)) <= 63
    with pytest.raises(ValueError, match="'pai-Carol' is no namespace name"):
        objects.namespace_name(SETTINGS, "Carol")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"flavor": "slurm"}, "flavor is 'slurm'; choose one of native, volcano, kueue, hived"),
        ({"vc_groups": {"g": "research"}}, r"vc_groups\['g'\] must be a list"),
        ({"vc_groups": {"g": ["Research!"]}}, r"vc_groups\['g'\]: 'Research!' is no virtual"),
        ({"open_vcs": ["a b"]}, "open_vcs: 'a b' is no virtual cluster"),
        ({"namespace_prefix": "Team_"}, "namespace_prefix 'Team_' must be"),
        ({"config_map": "my config"}, "config_map 'my config' is no ConfigMap name"),
        ({"user_role": ""}, "user_role must name a ClusterRole"),
        ({"pod_security": "privileged"}, "pod_security is 'privileged'; choose baseline or"),
        ({"ingress_from": ["everyone"]}, r"ingress_from\[0\] must be a NetworkPolicy peer"),
        ({"ingress_from": [{"from": {}}]}, r"ingress_from\[0\] must be a NetworkPolicy peer"),
    ],
)
def test_bad_arguments_name_the_field(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        configure_kubespawner(Config(), **{"flavor": "kueue", **kwargs})


def test_configure_kubespawner_sets_the_spawner() -> None:
    c = Config()
    configure_kubespawner(c, flavor="volcano", namespace_prefix="pai-")
    spawner = c.KubeSpawner
    assert spawner.enable_user_namespaces is True
    assert spawner.user_namespace_template == "pai-{username}"
    assert spawner.service_account == "jupyter-pai"
    assert callable(spawner.pre_spawn_hook) and callable(spawner.modify_pod_hook)


def test_modify_pod_hook_gives_the_server_its_settings() -> None:
    from kubespawner.objects import make_pod

    pod = make_pod(
        name="jupyter-carol",
        cmd=["jupyterhub-singleuser"],
        port=8888,
        image="quay.io/jupyter/base-notebook",
        env={"KUBECONFIG": "/home/jovyan/.kube/config", "JUPYTERHUB_USER": "carol"},
    )
    spawner = SimpleNamespace(namespace="pai-carol", user=SimpleNamespace(name="carol"))
    hook = hooks.make_modify_pod_hook(SETTINGS)
    pod = hook(spawner, hook(spawner, pod))  # twice: nothing doubles
    container = pod.spec.containers[0]
    env = {e.name: e.value for e in container.env}
    assert env["JUPYTER_PAI_NAMESPACE"] == "pai-carol"
    assert env["JUPYTER_PAI_FLAVOR"] == "kueue"
    assert env["JUPYTER_PAI_BACKEND"] == "kubernetes"
    assert env["JUPYTERHUB_USER"] == "carol"
    assert "KUBECONFIG" not in env  # in-cluster credentials, never a file from the home
    [volume] = [v for v in pod.spec.volumes if v.name == objects.CONFIG_VOLUME]
    assert volume.config_map.name == "jupyter-pai-config"
    [mount] = [m for m in container.volume_mounts if m.name == objects.CONFIG_VOLUME]
    assert mount.mount_path == "/etc/jupyter-pai" and mount.read_only
    assert env["JUPYTER_CONFIG_PATH"] == "/etc/jupyter-pai"


def test_namespaces_the_hub_never_gives_a_user() -> None:
    for name in ("default", "kube-system", "kube-public", "kube-node-lease", "kube-anything"):
        assert "Kubernetes' own" in (objects.reserved_namespace(name, "jhub") or ""), name
    assert objects.reserved_namespace("jhub", "jhub") == "'jhub' is the hub's own namespace"
    assert objects.reserved_namespace("pai-carol", "jhub") is None


def test_a_namespace_is_the_users_only_if_made_for_them() -> None:
    def meta(labels: dict[str, str] | None, annotations: dict[str, str] | None) -> Any:
        return SimpleNamespace(labels=labels, annotations=annotations)

    ours = {"jupyter-pai/managed": "true"}
    assert objects.made_for(meta(ours, {"jupyter-pai/user": "carol"}), "carol")
    assert not objects.made_for(meta(ours, {"jupyter-pai/user": "dave"}), "carol")
    assert not objects.made_for(meta(ours, None), "carol")
    assert not objects.made_for(meta(None, {"jupyter-pai/user": "carol"}), "carol")
    assert not objects.made_for(meta({"jupyter-pai/managed": "false"}, None), "carol")


def test_the_namespace_enforces_its_pod_security_level() -> None:
    for level in ("baseline", "restricted"):
        settings = HubSettings(flavor="volcano", pod_security=level)
        [ns, *_] = objects.user_objects(settings, "carol", "carol", ["default"])
        labels = ns["metadata"]["labels"]
        assert labels["pod-security.kubernetes.io/enforce"] == level
        assert labels["pod-security.kubernetes.io/enforce-version"] == "latest"
        assert objects.server_env(settings, "carol", [])["JUPYTER_PAI_POD_SECURITY"] == level


def test_no_network_policy_when_the_admin_says_none() -> None:
    settings = HubSettings(flavor="volcano", ingress_from=None)
    assert objects.network_policy(settings, "carol", "jhub") is None
    extra = {"namespaceSelector": {"matchLabels": {"team": "monitoring"}}}
    named = HubSettings(flavor="volcano", ingress_from=(extra,))
    policy = objects.network_policy(named, "carol", "jhub")
    assert policy is not None
    assert policy["spec"]["ingress"][0]["from"][-1] == extra


def test_a_restricted_namespace_gets_a_restricted_server_pod() -> None:
    from kubespawner.objects import make_pod

    pod = make_pod(
        name="jupyter-carol",
        cmd=["jupyterhub-singleuser"],
        port=8888,
        image="quay.io/jupyter/base-notebook",
        uid=1000,
    )
    spawner = SimpleNamespace(namespace="pai-carol", user=SimpleNamespace(name="carol"))
    settings = HubSettings(flavor="volcano", pod_security="restricted")
    pod = hooks.make_modify_pod_hook(settings)(spawner, pod)
    assert pod.spec.security_context == {
        "runAsNonRoot": True,
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    assert pod.spec.containers[0].security_context == {
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
        "runAsUser": 1000,  # KubeSpawner's uid, which meets the level, stays
    }
    env = {e.name: e.value for e in pod.spec.containers[0].env}
    assert env["JUPYTER_PAI_POD_SECURITY"] == "restricted"
    # A security context given as a client model (an admin's own hook) is kept too.
    from kubernetes_asyncio import client as k8s

    pod.spec.containers[0].security_context = k8s.V1SecurityContext(run_as_user=0, privileged=True)
    pod.spec.security_context = k8s.V1PodSecurityContext(fs_group=100)
    pod = hooks.make_modify_pod_hook(settings)(spawner, pod)
    assert pod.spec.security_context["fsGroup"] == 100
    assert pod.spec.containers[0].security_context == {
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
    }
