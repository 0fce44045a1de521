"""The Helm chart under deploy/helm/jupyter-pai, rendered with the pinned `helm`, and the
permission table it carries (files/permissions.yaml, written from permissions.py)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import yaml

from jupyter_pai.backends.kubernetes import permissions
from tests.cluster import helm, versions

CHART = Path(__file__).resolve().parents[2] / "deploy" / "helm" / "jupyter-pai"
PERMISSIONS_FILE = CHART / "files" / "permissions.yaml"

Manifest = dict[str, Any]

# `helm template` checks the chart's kubeVersion against this, not a cluster's.
KUBE_VERSION = versions.KUBERNETES.lstrip("v")

# What the golden files and the cluster tests render: two VCs, `research` neither
# borrowing nor lending, every value the config takes set.
TEST_VALUES: dict[str, Any] = {
    "virtualClusters": {
        "default": {"gpus": 24, "borrow": True, "lend": True},
        "research": {"gpus": 8, "borrow": False, "lend": False},
    },
    "openVirtualClusters": ["default"],
    "hub": {"serviceAccount": {"name": "hub", "namespace": "jhub"}},
    "native": {"priorityPrefix": "vc-", "quotaNamespaces": ["alice"]},
    "hived": {
        "vcCellType": "DT-NODE-POOL.DT-NODE",
        "gpusPerCell": 8,
        "physicalCluster": {
            "skuTypes": {"DT": {"gpu": 1, "cpu": 4, "memory": "32Gi"}},
            "cellTypes": {
                "DT-NODE": {"childCellType": "DT", "childCellNumber": 8, "isNodeLevel": True},
                "DT-NODE-POOL": {"childCellType": "DT-NODE", "childCellNumber": 4},
            },
            "physicalCells": [
                {
                    "cellType": "DT-NODE-POOL",
                    "cellChildren": [{"cellAddress": f"gpu-{i}"} for i in range(4)],
                }
            ],
        },
        "url": "http://hivedscheduler.pai:30096",
        "cpuSku": "",
    },
    "images": [
        {
            "name": "pytorch",
            "uri": "pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime",
            "description": "PyTorch 2.5 on CUDA 12.4",
            "gpu": True,
        },
    ],
    "prometheusUrl": "http://prometheus.monitoring:9090",
    "storages": {
        "labelSelector": "jupyter-pai.io/storage=true",
        "helperImage": "python:3.12-slim",
        "helperIdleSeconds": 120,
    },
    "abnormalJob": {"runningDays": 3, "gpuPercent": 5, "graceMinutes": 15},
}


def flavor_values(flavor: str) -> dict[str, Any]:
    return {**TEST_VALUES, "flavor": flavor}


def permissions_yaml() -> str:
    """files/permissions.yaml: per flavor, the namespaced and the cluster-scoped rules, one
    rule per resource, each verb's reason as a comment (the table admins read)."""
    lines = [
        "# Generated from jupyter_pai/backends/kubernetes/permissions.py: do not edit; run",
        "# `UPDATE_GOLDEN=1 python -m pytest tests/deploy` after changing that file.",
    ]
    for flavor in permissions.FLAVORS:
        lines.append(f"{flavor}:")
        perms = permissions.required(flavor)
        for scope, cluster in (("namespaced", False), ("cluster", True)):
            chosen = [p for p in perms if p.cluster == cluster]
            lines.append(f"  {scope}:")
            for rule in permissions.policy_rules(chosen):
                group, resource = rule["apiGroups"][0], rule["resources"][0]
                for p in chosen:
                    if (p.group, p.resource) == (group, resource):
                        lines.append(f"    # {p.verb}: {p.why}")
                lines.append(f"    - apiGroups: [{json.dumps(group)}]")
                lines.append(f"      resources: [{json.dumps(resource)}]")
                lines.append(f"      verbs: {json.dumps(rule['verbs'])}")
    return "\n".join(lines) + "\n"


def helm_run(*args: str) -> str:
    result = subprocess.run(
        [str(helm.ensure_helm()), *args], capture_output=True, text=True, timeout=120
    )
    if result.returncode != 0:
        raise AssertionError(f"helm {' '.join(args)} failed:\n{result.stderr}{result.stdout}")
    return result.stdout


def template(values: dict[str, Any] | None = None, *, namespace: str = "default") -> str:
    """`helm template` of the chart with ``values`` (JSON is YAML) on top of values.yaml."""
    args = ["template", "jupyter-pai", str(CHART), "--namespace", namespace]
    args += ["--kube-version", KUBE_VERSION]
    if values:
        args += ["--values", "/dev/stdin"]
        result = subprocess.run(
            [str(helm.ensure_helm()), *args],
            input=json.dumps(values),
            capture_output=True,
            text=True,
            timeout=120,
        )
        if result.returncode != 0:
            raise AssertionError(f"helm template failed:\n{result.stderr}{result.stdout}")
        return result.stdout
    return helm_run(*args)


def objects(text: str) -> list[Manifest]:
    return [doc for doc in yaml.safe_load_all(text) if doc]


def named(docs: list[Manifest], kind: str, name: str) -> Manifest:
    found = [d for d in docs if d["kind"] == kind and d["metadata"]["name"] == name]
    assert len(found) == 1, f"{len(found)} {kind} {name} rendered"
    return found[0]
