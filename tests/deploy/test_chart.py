"""The Helm chart without a cluster: it lints, renders each flavor as the golden files
say, its roles grant exactly the backend's permission table, and bad values are refused
naming the field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from jupyter_pai.backends.kubernetes import permissions
from tests.golden import check_golden

from .chart import (
    CHART,
    PERMISSIONS_FILE,
    flavor_values,
    helm_run,
    named,
    objects,
    permissions_yaml,
    template,
)

GOLDEN = Path(__file__).parent / "golden"


def granted(role: dict[str, Any]) -> set[tuple[str, str, str]]:
    out = set()
    for rule in role["rules"]:
        assert "resourceNames" not in rule and "nonResourceURLs" not in rule, rule
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                out |= {(group, resource, verb) for verb in rule["verbs"]}
    return out


def test_lint() -> None:
    for flavor in permissions.FLAVORS:
        out = helm_run(
            "lint",
            "--strict",
            str(CHART),
            "--set",
            f"flavor={flavor}",
            "--set",
            "hived.vcCellType=DT-NODE-POOL.DT-NODE",
        )
        assert "0 chart(s) failed" in out


def test_permissions_file_is_written_from_the_table() -> None:
    check_golden(PERMISSIONS_FILE, permissions_yaml())


@pytest.mark.parametrize("flavor", permissions.FLAVORS)
def test_template_golden(flavor: str) -> None:
    check_golden(GOLDEN / f"{flavor}.yaml", template(flavor_values(flavor)))


@pytest.mark.parametrize("flavor", permissions.FLAVORS)
def test_roles_grant_exactly_the_table(flavor: str) -> None:
    docs = objects(template(flavor_values(flavor)))
    required = permissions.required(flavor)
    user = named(docs, "ClusterRole", "jupyter-pai-user")
    reader = named(docs, "ClusterRole", "jupyter-pai-cluster-reader")
    assert granted(user) == {(p.group, p.resource, p.verb) for p in required if not p.cluster}
    assert granted(reader) == {(p.group, p.resource, p.verb) for p in required if p.cluster}
    assert "aggregationRule" not in user and "aggregationRule" not in reader


def test_required_names_the_field() -> None:
    with pytest.raises(ValueError, match="flavor: must be one of native, volcano, kueue, hived"):
        permissions.required("slurm")


def test_table_has_no_verb_without_a_caller() -> None:
    # Rights the backend never uses must not creep in "just in case".
    for flavor in permissions.FLAVORS:
        table = permissions.required(flavor)
        keys = {(p.group, p.resource, p.verb) for p in table}
        assert len(keys) == len(table)
        assert not [k for k in keys if k[1] == "pods/exec" or k[2] in ("update", "*", "escalate")]
        assert ("", "secrets", "deletecollection") not in keys
        assert all(p.why for p in table)
        # WebSocket port-forwards are authorised as get and (newer servers) create.
        assert {("", "pods/portforward", "get"), ("", "pods/portforward", "create")} <= keys
        assert {p.resource for p in table if p.cluster} <= {
            "nodes",
            "priorityclasses",
            "queues",
            "clusterqueues",
        }


def test_no_role_of_another_project_gains_jupyter_pais_rights() -> None:
    """By default jupyter-pai-user joins no aggregated role (Kueue's batch-user among them:
    everyone bound to it anywhere would gain Secrets, pod create and port-forward). Joined
    on purpose, only the JobSet and Workload verbs go, in a role of their own."""
    for flavor in permissions.FLAVORS:
        docs = objects(template(flavor_values(flavor)))
        labels = named(docs, "ClusterRole", "jupyter-pai-user")["metadata"]["labels"]
        assert not [k for k in labels if k.startswith("rbac.")], labels
        assert not [d for d in docs if d["metadata"]["name"] == "jupyter-pai-jobs-aggregated"]
    aggregate = {"rbac.kueue.x-k8s.io/batch-user": "true"}
    docs = objects(template({**flavor_values("kueue"), "aggregateTo": aggregate}))
    user = named(docs, "ClusterRole", "jupyter-pai-user")
    assert "rbac.kueue.x-k8s.io/batch-user" not in user["metadata"]["labels"]
    joined = named(docs, "ClusterRole", "jupyter-pai-jobs-aggregated")
    assert joined["metadata"]["labels"]["rbac.kueue.x-k8s.io/batch-user"] == "true"
    assert {r for _, r, _ in granted(joined)} == {"jobsets", "workloads"}
    assert granted(joined) <= granted(user)
    assert ("", "secrets", "get") not in granted(joined)


def test_config_holds_the_traits() -> None:
    docs = objects(template(flavor_values("hived")))
    config = json.loads(
        named(docs, "ConfigMap", "jupyter-pai-config")["data"]["jupyter_server_config.json"]
    )
    assert config["PAIConfig"]["backend"] == "kubernetes"
    assert config["PAIConfig"]["images"][0]["name"] == "pytorch"
    assert config["KubernetesBackend"] == {
        "flavor": "hived",
        "gpu_resource": "nvidia.com/gpu",
        "prometheus_url": "http://prometheus.monitoring:9090",
        "storage_label_selector": "jupyter-pai.io/storage=true",
        "storage_helper_image": "python:3.12-slim",
        "storage_helper_idle": 120,
        "hived_url": "http://hivedscheduler.pai:30096",
        "hived_cpu_sku": "",
    }
    assert config["Backend"] == {
        "abnormal_running_days": 3,
        "abnormal_gpu_percent": 5,
        "abnormal_grace_minutes": 15,
    }


def test_config_loads_into_the_traits(tmp_path: Path) -> None:
    """The rendered file configures the real classes (names and types of the traits)."""
    from traitlets.config.loader import JSONFileConfigLoader

    from jupyter_pai.backends.kubernetes.backend import KubernetesBackend
    from jupyter_pai.config import PAIConfig

    docs = objects(template(flavor_values("native")))
    text = named(docs, "ConfigMap", "jupyter-pai-config")["data"]["jupyter_server_config.json"]
    (tmp_path / "jupyter_server_config.json").write_text(text)
    config = JSONFileConfigLoader("jupyter_server_config.json", str(tmp_path)).load_config()
    backend = KubernetesBackend(config=config, namespace="alice", user="alice")
    assert backend.flavor == "native"
    assert backend.prometheus_url == "http://prometheus.monitoring:9090"
    assert backend.storage_helper_idle == 120
    assert backend.abnormal_running_days == 3
    assert backend.vc_priority_prefix == "vc-"
    assert PAIConfig(config=config).images[0]["uri"].startswith("pytorch/")


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"flavor": "slurm"}, "flavor: must be one of native, volcano, kueue, hived"),
        ({"virtualClusters": {"a": {"gpus": -1}}}, "virtualClusters.a.gpus: must be a whole"),
        ({"virtualClusters": {"a": {"gpus": "8"}}}, "virtualClusters.a.gpus: must be a whole"),
        ({"virtualClusters": {"A_b": {"gpus": 1}}}, "virtualClusters.A_b: a VC name must be"),
        ({"virtualClusters": {"a": {"gpus": 1, "borrow": "no"}}}, "virtualClusters.a.borrow"),
        (
            {"flavor": "hived", "hived": {"vcCellType": "X", "gpusPerCell": 3}},
            "virtualClusters.default.gpus: 8 is not a multiple of hived.gpusPerCell",
        ),
        ({"flavor": "hived"}, "hived.vcCellType: name the cell type"),
        (
            {"userNamespaces": {"podSecurity": "privileged"}},
            "userNamespaces.podSecurity: must be baseline or restricted",
        ),
        (
            {"aggregateTo": {"rbac.example/user": "true"}},
            "aggregateTo: only the kueue flavour has another project's role to join",
        ),
        (
            {"flavor": "native", "virtualClusters": {"none": {"gpus": 1}}},
            "virtualClusters.none: on native the name is taken",
        ),
    ],
)
def test_bad_values_name_the_field(values: dict[str, Any], message: str) -> None:
    with pytest.raises(AssertionError, match=message):
        # Only the values under test on top of values.yaml.
        template(values)


def test_volcano_queues_are_the_backends() -> None:
    """The chart writes each VC's Queue as the backend's own builder does."""
    from jupyter_pai.backends.kubernetes.flavors.volcano_queues import queue_manifest

    values = flavor_values("volcano")
    docs = objects(template(values))
    for name, vc in values["virtualClusters"].items():
        rendered = named(docs, "Queue", name)
        expected = queue_manifest(name, vc["gpus"], borrow=vc["borrow"], lend=vc["lend"])
        assert rendered["spec"] == expected["spec"]
        assert rendered["apiVersion"] == expected["apiVersion"]


def test_kueue_cluster_queues_are_the_test_clusters() -> None:
    """Each ClusterQueue as tests/cluster makes them (the backend reads those), plus the
    cohort and the namespaces that may use it."""
    from tests.cluster import kueue

    values = flavor_values("kueue")
    docs = objects(template(values))
    assert named(docs, "ResourceFlavor", kueue.FLAVOR)["apiVersion"] == kueue.QUEUE_API
    for name, vc in values["virtualClusters"].items():
        rendered = named(docs, "ClusterQueue", name)
        limit = None if vc["borrow"] else 0
        lend = None if vc["lend"] else 0
        expected = kueue.cluster_queue(
            name, vc["gpus"], cohort="jupyter-pai", borrowing_limit=limit, lending_limit=lend
        )
        selector = {} if name == "default" else {"matchLabels": {f"jupyter-pai/vc.{name}": "true"}}
        assert rendered["spec"] == {**expected["spec"], "namespaceSelector": selector}
