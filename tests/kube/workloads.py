"""Builders and observers for the cluster tests: gang jobs, plain pods, binding counts."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from kubernetes.client.exceptions import ApiException

from tests.cluster import kube, kwokconfig, manifests

Obj = dict[str, Any]
GROUP, VERSION = "scheduling.k8s.io", "v1alpha2"
JOB_LABEL = "jupyter-pai.test/job"


def container(gpus: int, command: list[str] | None = None) -> Obj:
    resources = {"cpu": "1", "memory": "1Gi"}
    limits: Obj = {manifests.GPU_RESOURCE: str(gpus)} if gpus else {}
    return {
        "name": "main",
        "image": "python:3",
        **({"command": command} if command else {}),
        "resources": {"requests": {**resources, **limits}, "limits": limits},
    }


def pod(
    name: str,
    job: str,
    gpus: int,
    pool: str,
    *,
    group: str | None = None,
    run_for: str | None = None,
    priority_class: str | None = None,
) -> Obj:
    """A worker pod of `job` on the simulated pool `pool`; `group` makes it a gang member."""
    spec: Obj = {
        "restartPolicy": "Never",
        "nodeSelector": {manifests.POOL_LABEL: pool},
        "containers": [container(gpus)],
        "terminationGracePeriodSeconds": 0,
    }
    if group:
        spec["schedulingGroup"] = {"podGroupName": group}
    if priority_class:
        spec["priorityClassName"] = priority_class
    annotations = {kwokconfig.RUN_FOR: run_for} if run_for else {}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {JOB_LABEL: job}, "annotations": annotations},
        "spec": spec,
    }


def pod_group(name: str, min_count: int) -> Obj:
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "PodGroup",
        "metadata": {"name": name},
        "spec": {"schedulingPolicy": {"gang": {"minCount": min_count}}},
    }


def create_pod_group(api: Any, namespace: str, name: str, min_count: int) -> None:
    kube.custom(api).create_namespaced_custom_object(
        GROUP, VERSION, namespace, "podgroups", pod_group(name, min_count)
    )


def indexed_job(
    name: str,
    workers: int,
    gpus: int,
    pool: str,
    *,
    priority_class: str | None = None,
    run_for: str | None = None,
) -> Obj:
    """An Indexed Job with completions == parallelism: the Job controller
    (WorkloadWithJob) gives it a Workload and a gang PodGroup of `workers`."""
    template = pod(name, name, gpus, pool, priority_class=priority_class, run_for=run_for)
    for key in ("apiVersion", "kind"):
        template.pop(key)
    template["metadata"].pop("name")
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "labels": {JOB_LABEL: name}},
        "spec": {
            "completionMode": "Indexed",
            "completions": workers,
            "parallelism": workers,
            "backoffLimit": 0,
            "template": template,
        },
    }


def job_pods(core: Any, namespace: str, job: str) -> list[Any]:
    return list(core.list_namespaced_pod(namespace, label_selector=f"{JOB_LABEL}={job}").items)


def bound(pods: list[Any], *, active_only: bool = False) -> int:
    """Pods the scheduler bound to a node (optionally: and not finished)."""
    return sum(
        1
        for p in pods
        if p.spec.node_name and not (active_only and p.status.phase in ("Succeeded", "Failed"))
    )


def wait_for(check: Callable[[], bool], timeout: float, what: str, interval: float = 0.2) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s: {what}")


def delete_job(api: Any, namespace: str, name: str) -> None:
    try:
        kube.batch(api).delete_namespaced_job(
            name, namespace, propagation_policy="Background", grace_period_seconds=0
        )
    except ApiException as error:
        if error.status != 404:
            raise


def delete_by_label(api: Any, namespace: str, job: str) -> None:
    kube.core(api).delete_collection_namespaced_pod(
        namespace, label_selector=f"{JOB_LABEL}={job}", grace_period_seconds=0
    )


# -- Volcano ------------------------------------------------------------------------------

VC_GROUP, VC_VERSION = "batch.volcano.sh", "v1alpha1"
PG_GROUP, PG_VERSION = "scheduling.volcano.sh", "v1beta1"


def vcjob(
    name: str,
    replicas: int,
    gpus: int,
    node_selector: dict[str, str],
    *,
    queue: str = "default",
    min_available: int | None = None,
    command: list[str] | None = None,
) -> Obj:
    """A `batch.volcano.sh` Job of one task `worker` (`replicas` pods of `gpus` GPUs),
    a gang of `min_available` (all of them unless given), for the Volcano scheduler."""
    return {
        "apiVersion": f"{VC_GROUP}/{VC_VERSION}",
        "kind": "Job",
        "metadata": {"name": name, "labels": {JOB_LABEL: name}},
        "spec": {
            "schedulerName": "volcano",
            "queue": queue,
            "minAvailable": replicas if min_available is None else min_available,
            "plugins": {"env": []},
            "tasks": [
                {
                    "name": "worker",
                    "replicas": replicas,
                    "template": {
                        "metadata": {"labels": {JOB_LABEL: name}},
                        "spec": {
                            "restartPolicy": "Never",
                            "nodeSelector": node_selector,
                            "terminationGracePeriodSeconds": 0,
                            "containers": [container(gpus, command)],
                        },
                    },
                }
            ],
        },
    }


def create_vcjob(api: Any, namespace: str, job: Obj) -> None:
    kube.custom(api).create_namespaced_custom_object(VC_GROUP, VC_VERSION, namespace, "jobs", job)


def read_vcjob(api: Any, namespace: str, name: str) -> Obj:
    return dict(
        kube.custom(api).get_namespaced_custom_object(VC_GROUP, VC_VERSION, namespace, "jobs", name)
    )


def vcjob_phase(api: Any, namespace: str, name: str) -> str:
    return str(read_vcjob(api, namespace, name).get("status", {}).get("state", {}).get("phase"))


def vcjob_pod_group(api: Any, namespace: str, name: str) -> Obj | None:
    """The PodGroup vc-controller-manager made for the vcjob (owned by it), if any."""
    groups = kube.custom(api).list_namespaced_custom_object(
        PG_GROUP, PG_VERSION, namespace, "podgroups"
    )["items"]
    for group in groups:
        owners = group["metadata"].get("ownerReferences") or []
        if any(o["kind"] == "Job" and o["name"] == name for o in owners):
            return dict(group)
    return None


def delete_vcjob(api: Any, namespace: str, name: str) -> None:
    try:
        kube.custom(api).delete_namespaced_custom_object(
            VC_GROUP, VC_VERSION, namespace, "jobs", name, propagation_policy="Background"
        )
    except ApiException as error:
        if error.status != 404:
            raise
