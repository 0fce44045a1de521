"""Volcano in the test control plane: what `up` applies (both CRD sets, the admission
policies, webhook configurations by URL, the VC queues) and how it starts
vc-webhook-manager, vc-controller-manager and vc-scheduler as processes beside
kube-scheduler. The binaries and chart files come from `build.ensure_volcano()`."""

from __future__ import annotations

import base64
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

Manifest = dict[str, Any]

SCHEDULER_NAME = "volcano"
# The chart's release namespace; its webhooks skip it and kube-system.
NAMESPACE = "volcano-system"
WEBHOOK_PREFIX = "volcano-admission-service"

# The chart's default `custom.enabled_admissions`: no pod webhooks, so pods of other
# schedulers never pass through Volcano.
ENABLED_ADMISSIONS = (
    "/jobs/mutate",
    "/jobs/validate",
    "/podgroups/validate",
    "/queues/mutate",
    "/queues/validate",
    "/hypernodes/validate",
    "/cronjobs/validate",
)

# The chart's default scheduler conf (config/volcano-scheduler.conf) with `preempt` and
# `reclaim` added and `capacity` in place of `proportion`: capacity reads a queue's
# `deserved` per resource (GPUs lent while idle, reclaimed up to `deserved`), bounded
# by `capability` and `guarantee`; proportion ignores `deserved` and derives shares from
# weights. Volcano's docs say the two conflict: never both.
SCHEDULER_CONF: dict[str, Any] = {
    "actions": "enqueue, allocate, preempt, reclaim, backfill",
    "tiers": [
        {
            "plugins": [
                {"name": "priority"},
                {"name": "gang", "enablePreemptable": False},
                {"name": "conformance"},
            ]
        },
        {
            "plugins": [
                {"name": "overcommit"},
                {"name": "drf", "enablePreemptable": False},
                {"name": "predicates"},
                {"name": "capacity"},
                {"name": "nodeorder"},
                {"name": "binpack"},
            ]
        },
    ],
}


@dataclass(frozen=True)
class _Webhook:
    path: str
    name: str
    group: str
    version: str
    resource: str
    operations: tuple[str, ...]
    namespaced: bool = True

    @property
    def mutating(self) -> bool:
        return self.path.endswith("/mutate")


# templates/webhooks.yaml, one entry per path: webhook name, rules, operations.
_WEBHOOKS = {
    w.path: w
    for w in (
        _Webhook("/jobs/mutate", "mutatejob", "batch.volcano.sh", "v1alpha1", "jobs", ("CREATE",)),
        _Webhook(
            "/jobs/validate",
            "validatejob",
            "batch.volcano.sh",
            "v1alpha1",
            "jobs",
            ("CREATE", "UPDATE"),
        ),
        _Webhook(
            "/podgroups/validate",
            "validatepodgroup",
            "scheduling.volcano.sh",
            "v1beta1",
            "podgroups",
            ("CREATE",),
        ),
        _Webhook(
            "/queues/mutate",
            "mutatequeue",
            "scheduling.volcano.sh",
            "v1beta1",
            "queues",
            ("CREATE",),
        ),
        _Webhook(
            "/queues/validate",
            "validatequeue",
            "scheduling.volcano.sh",
            "v1beta1",
            "queues",
            ("CREATE", "UPDATE", "DELETE"),
        ),
        _Webhook(
            "/hypernodes/validate",
            "validatehypernodes",
            "topology.volcano.sh",
            "v1alpha1",
            "hypernodes",
            ("CREATE", "UPDATE"),
            namespaced=False,
        ),
        _Webhook(
            "/cronjobs/validate",
            "validatecronjob",
            "batch.volcano.sh",
            "v1alpha1",
            "cronjobs",
            ("CREATE", "UPDATE"),
        ),
    )
}


# libyaml's loader where PyYAML has it: the CRDs are 1 MB of YAML (1.3 s in pure Python).
_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _documents(paths: list[Path]) -> list[Manifest]:
    return [doc for path in paths for doc in yaml.load_all(path.read_text(), _Loader) if doc]


def crds(volcano_dir: Path) -> list[Manifest]:
    """Both CRD sets as the chart has them: vc-controller-manager's informers wait for
    the `flow.volcano.sh` ones too."""
    chart = volcano_dir / "chart"
    paths = sorted((chart / "crd" / "bases").glob("*.yaml"))
    paths += sorted((chart / "charts" / "jobflow" / "crd" / "bases").glob("*.yaml"))
    return _documents(paths)


def admission_policies(volcano_dir: Path) -> list[Manifest]:
    """chart/policy: ValidatingAdmissionPolicies (v1) as they are; the
    MutatingAdmissionPolicies are written for `v1beta1`, which kube-apiserver v1.36 does
    not serve by default (the API is GA, `v1`, on by default, same fields), so they are
    applied as `v1` rather than switching a beta API on. None takes params."""
    docs = _documents(sorted((volcano_dir / "chart" / "policy").glob("*.yaml")))
    for doc in docs:
        if doc["apiVersion"] == "admissionregistration.k8s.io/v1beta1":
            doc["apiVersion"] = "admissionregistration.k8s.io/v1"
    return docs


def webhook_configurations(url: str, ca_pem: bytes) -> list[Manifest]:
    """The Mutating/ValidatingWebhookConfigurations of templates/webhooks.yaml for the
    enabled paths, by URL instead of a Service; named as vc-webhook-manager expects
    (`volcano-admission-service-<path with - for />`), so it finds and patches them."""
    objects = []
    for path in ENABLED_ADMISSIONS:
        hook = _WEBHOOKS[path]
        webhook: Manifest = {
            "name": f"{hook.name}.volcano.sh",
            "admissionReviewVersions": ["v1"],
            "clientConfig": {
                "url": url + path,
                "caBundle": base64.b64encode(ca_pem).decode(),
            },
            "failurePolicy": "Fail",
            "matchPolicy": "Equivalent",
            "rules": [
                {
                    "apiGroups": [hook.group],
                    "apiVersions": [hook.version],
                    "operations": list(hook.operations),
                    "resources": [hook.resource],
                    "scope": "*",
                }
            ],
            "sideEffects": "NoneOnDryRun" if hook.namespaced else "None",
            "timeoutSeconds": 10,
        }
        if hook.namespaced:
            webhook["namespaceSelector"] = {
                "matchExpressions": [
                    {
                        "key": "kubernetes.io/metadata.name",
                        "operator": "NotIn",
                        "values": [NAMESPACE, "kube-system"],
                    }
                ]
            }
            webhook["objectSelector"] = {}
        if hook.mutating:
            webhook["reinvocationPolicy"] = "Never"
        kind = "MutatingWebhookConfiguration" if hook.mutating else "ValidatingWebhookConfiguration"
        objects.append(
            {
                "apiVersion": "admissionregistration.k8s.io/v1",
                "kind": kind,
                "metadata": {"name": WEBHOOK_PREFIX + path.replace("/", "-")},
                "webhooks": [webhook],
            }
        )
    return objects


def controller_configmap() -> Manifest:
    """The chart's (empty) controller configuration, which vc-controller-manager reads
    at start and logs an error without."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "volcano-controller-configmap", "namespace": NAMESPACE},
        "data": {"volcano-controller.conf": ""},
    }


def webhook_manager_argv(
    volcano_dir: Path,
    kubeconfig: Path,
    port: int,
    healthz_port: int,
    cert: Path,
    key: Path,
    ca: Path,
) -> list[str]:
    return [
        str(volcano_dir / "bin" / "vc-webhook-manager"),
        f"--kubeconfig={kubeconfig}",
        # The chart's admission conf (resource groups, all commented out).
        f"--admission-conf={volcano_dir / 'chart' / 'config' / 'volcano-admission.conf'}",
        f"--webhook-url=https://127.0.0.1:{port}",
        "--listen-address=127.0.0.1",
        f"--port={port}",
        f"--tls-cert-file={cert}",
        f"--tls-private-key-file={key}",
        f"--ca-cert-file={ca}",
        f"--enabled-admission={','.join(ENABLED_ADMISSIONS)}",
        f"--scheduler-name={SCHEDULER_NAME}",
        f"--webhook-namespace={NAMESPACE}",
        "--enable-healthz",
        f"--healthz-address=127.0.0.1:{healthz_port}",
        "--logtostderr",
    ]


def controller_manager_argv(
    bin_dir: Path, kubeconfig: Path, metrics_port: int, healthz_port: int
) -> list[str]:
    return [
        str(bin_dir / "vc-controller-manager"),
        f"--kubeconfig={kubeconfig}",
        "--leader-elect=false",
        f"--scheduler-name={SCHEDULER_NAME}",
        f"--listen-address=127.0.0.1:{metrics_port}",
        "--enable-healthz",
        f"--healthz-address=127.0.0.1:{healthz_port}",
        "--kube-api-qps=200",
        "--kube-api-burst=400",
        "--logtostderr",
    ]


def scheduler_argv(
    bin_dir: Path,
    kubeconfig: Path,
    conf: Path,
    metrics_port: int,
    healthz_port: int,
    dump_dir: Path,
    schedule_period: str | None = None,
) -> list[str]:
    period = [f"--schedule-period={schedule_period}"] if schedule_period else []
    return [
        str(bin_dir / "vc-scheduler"),
        *period,
        f"--kubeconfig={kubeconfig}",
        f"--scheduler-conf={conf}",
        f"--scheduler-name={SCHEDULER_NAME}",
        "--leader-elect=false",
        f"--listen-address=127.0.0.1:{metrics_port}",
        "--enable-healthz",
        f"--healthz-address=127.0.0.1:{healthz_port}",
        f"--cache-dump-dir={dump_dir}",
        "--logtostderr",
    ]


def write_scheduler_conf(path: Path) -> Path:
    path.write_text(yaml.safe_dump(SCHEDULER_CONF, sort_keys=False))
    return path
