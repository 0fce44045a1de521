"""The hooks through which the Kubernetes backend asks a flavor for everything a scheduler
does its own way: kinds to watch, virtual clusters, submission checks, waiting reasons, stop.
A new flavor adds its cases here."""

from __future__ import annotations

from typing import Any

import pytest

from jupyter_pai.backends.kubernetes.flavors import FLAVORS, Flavor, HivedSettings
from jupyter_pai.backends.kubernetes.flavors.kueue import (
    KUEUE_CLUSTER_QUEUE,
    KUEUE_LOCAL_QUEUE,
    KUEUE_WORKLOAD,
)
from jupyter_pai.backends.kubernetes.flavors.volcano import (
    VOLCANO_COMMAND,
    VOLCANO_POD_GROUP,
    VOLCANO_QUEUE,
)
from jupyter_pai.backends.kubernetes.naming import make_names
from jupyter_pai.backends.kubernetes.pods import PodOptions
from jupyter_pai.backends.kubernetes.resources import (
    BATCH_JOB,
    PRIORITY_CLASS,
    RESOURCE_QUOTA,
    Kind,
)
from jupyter_pai.backends.models import Resources
from jupyter_pai.errors import SpecError
from jupyter_pai.spec import parse_job

OPTIONS = PodOptions(namespace="alice")
CLUSTER = Resources(gpu=32, cpu=64, memory_mb=262144)

JOB = parse_job(
    """
protocolVersion: 2
name: t
type: job
defaults: {virtualCluster: research}
taskRoles:
  ps: {instances: 1, commands: [sleep 1], resourcePerInstance: {gpu: 0}}
  worker: {instances: 2, commands: [sleep 1], resourcePerInstance: {gpu: 2}}
"""
).job
NAMES = make_names(JOB, "alice")


def flavor(name: str) -> Flavor:
    return FLAVORS[name](OPTIONS)


def objects(listing: dict[Kind, list[dict[str, Any]]]) -> Any:
    return lambda kind: listing.get(kind, [])


QUEUES: dict[Kind, list[dict[str, Any]]] = {
    VOLCANO_QUEUE: [
        {"metadata": {"name": "default"}, "spec": {"weight": 1}},
        {
            "metadata": {"name": "research"},
            "spec": {"capability": {"nvidia.com/gpu": "8"}},
            "status": {"allocated": {"nvidia.com/gpu": "6"}},
        },
    ]
}


def _cluster_queue(name: str, nominal: int, reserved: int = 0) -> dict[str, Any]:
    gpus = {"name": "nvidia.com/gpu", "nominalQuota": str(nominal)}
    return {
        "metadata": {"name": name},
        "spec": {"resourceGroups": [{"flavors": [{"name": "gpu", "resources": [gpus]}]}]},
        "status": {
            "flavorsReservation": [
                {
                    "name": "gpu",
                    "resources": [{"name": "nvidia.com/gpu", "total": str(reserved)}],
                }
            ]
        },
    }


CLUSTER_QUEUES: dict[Kind, list[dict[str, Any]]] = {
    KUEUE_CLUSTER_QUEUE: [_cluster_queue("default", 10000), _cluster_queue("research", 8, 6)],
    KUEUE_LOCAL_QUEUE: [
        {"metadata": {"name": vc}, "spec": {"clusterQueue": vc}} for vc in ("default", "research")
    ],
}
PRIORITY_CLASSES: dict[Kind, list[dict[str, Any]]] = {
    PRIORITY_CLASS: [
        {"metadata": {"name": "vc-research"}},
        {"metadata": {"name": "vc-default"}},
        {"metadata": {"name": "system-cluster-critical"}},
    ],
    RESOURCE_QUOTA: [
        {
            "metadata": {"name": "research-gpus"},
            "spec": {
                "hard": {"requests.nvidia.com/gpu": "8"},
                "scopeSelector": {
                    "matchExpressions": [
                        {
                            "scopeName": "PriorityClass",
                            "operator": "In",
                            "values": ["vc-research"],
                        }
                    ]
                },
            },
            "status": {"used": {"requests.nvidia.com/gpu": "2"}},
        }
    ],
}


@pytest.mark.parametrize("name", sorted(FLAVORS))
def test_watched_kinds_are_consistent(name: str) -> None:
    f = flavor(name)
    assert all(k.namespaced for k in (*f.extra_kinds, *f.foreign_kinds))
    assert not any(k.namespaced for k in f.cluster_kinds)
    assert f.pod_group_kind is None or f.pod_group_kind in (*f.extra_kinds, *f.foreign_kinds)


def test_volcano_virtual_clusters_are_queues() -> None:
    vcs = flavor("volcano").virtual_clusters(objects(QUEUES), [], CLUSTER)
    assert vcs is not None
    by_name = {v.name: v for v in vcs}
    assert by_name["default"].capacity == CLUSTER  # no cap: the whole cluster
    research = by_name["research"]
    assert (research.capacity.gpu, research.used.gpu, research.free.gpu) == (8, 6, 2)
    assert research.description == "Volcano queue research (Open)"


def test_a_volcano_queue_without_caps_takes_any_job_and_root_is_no_vc() -> None:
    """Volcano's own `default` queue has no capability, deserved or guarantee: unlimited
    (once read as 0 GPUs, which refused every GPU job). `root`, which vc-controller-manager
    adds as every queue's parent, takes no jobs and is not listed."""
    listing = {VOLCANO_QUEUE: [*QUEUES[VOLCANO_QUEUE], {"metadata": {"name": "root"}}]}
    f = flavor("volcano")
    known = {v.name: v for v in f.virtual_clusters(objects(listing), [], None) or []}
    assert sorted(known) == ["default", "research"]
    wide = JOB.model_copy(deep=True)
    wide.defaults.virtual_cluster = "default"
    wide.task_roles["worker"].instances = 50
    f.check_virtual_cluster(wide, known)  # 100 GPUs: the scheduler decides, not us


def test_native_virtual_clusters_are_priority_classes_capped_by_quotas() -> None:
    vcs = flavor("native").virtual_clusters(objects(PRIORITY_CLASSES), [], CLUSTER)
    assert vcs is not None
    by_name = {v.name: v for v in vcs}
    assert sorted(by_name) == ["default", "research"]  # only the vc- prefix
    assert (by_name["research"].capacity.gpu, by_name["research"].used.gpu) == (8, 2)
    assert by_name["default"].capacity == CLUSTER


@pytest.mark.parametrize("name", ["hived"])
def test_flavors_without_a_listing_accept_any_virtual_cluster(name: str) -> None:
    f = flavor(name)
    assert f.virtual_clusters(objects({}), [], CLUSTER) is None
    gpus_only = JOB.model_copy(deep=True)
    gpus_only.task_roles["ps"].resource_per_instance.gpu = 1
    f.check_virtual_cluster(gpus_only, None)


def test_hived_refuses_a_task_without_gpus() -> None:
    """HiveD's filter refuses a pod that asks no GPU cell; the job would wait for good."""
    with pytest.raises(SpecError) as err:
        flavor("hived").check_virtual_cluster(JOB, None)
    assert [e.path for e in err.value.errors] == ["taskRoles.ps.resourcePerInstance.gpu"]


def test_hived_with_cpu_cells_needs_the_gpu_sku_of_a_gpu_task() -> None:
    """With a CPU SKU and no HiveD address to read the VC's GPU SKU from, a GPU task that
    names none could be given CPU cells: refused, naming where to write the SKU."""
    f = FLAVORS["hived"](OPTIONS, HivedSettings(cpu_sku="CPU"))
    with pytest.raises(SpecError) as err:
        f.check_virtual_cluster(JOB, None)
    assert [e.path for e in err.value.errors] == ["extras.hivedScheduler.taskRoles.worker.skuType"]
    assert "KubernetesBackend.hived_url" in err.value.errors[0].message


@pytest.mark.parametrize(
    ("name", "listing"),
    [("volcano", QUEUES), ("native", PRIORITY_CLASSES), ("kueue", CLUSTER_QUEUES)],
)
def test_submission_checks_against_the_listed_virtual_clusters(
    name: str, listing: dict[Kind, list[dict[str, Any]]]
) -> None:
    f = flavor(name)
    known = {v.name: v for v in f.virtual_clusters(objects(listing), [], None) or []}
    f.check_virtual_cluster(JOB, known)  # 4 GPUs fit research's 8
    big = JOB.model_copy(deep=True)
    big.task_roles["worker"].instances = 5
    with pytest.raises(SpecError) as err:
        f.check_virtual_cluster(big, known)
    assert err.value.errors[0].path == "taskRoles.worker.resourcePerInstance.gpu"
    assert "needs 10 GPUs at once but virtual cluster research has 8" in err.value.errors[0].message
    with pytest.raises(SpecError) as err:
        f.check_virtual_cluster(JOB, {k: v for k, v in known.items() if k != "research"})
    assert err.value.errors[0].message == "no virtual cluster 'research'; choose one of default"


UNSCHEDULABLE = {
    "status": {
        "conditions": [
            {
                "type": "Unschedulable",
                "status": "True",
                "message": "4/4 tasks in gang unschedulable: 0/3 nodes are available: 3 Insufficient nvidia.com/gpu.",
            }
        ]
    }
}


@pytest.mark.parametrize("name", ["volcano", "native"])
def test_a_gangs_pod_group_says_why_it_waits(name: str) -> None:
    f = flavor(name)
    assert f.pod_group_kind is not None
    reason = f.waiting_reason(JOB, vc=None, events=[], related={f.pod_group_kind: [UNSCHEDULABLE]})
    assert reason == "no node has 2 free GPUs (3 nodes short of GPUs)"


def test_waiting_reason_reads_the_virtual_clusters_use() -> None:
    f = flavor("volcano")
    known = {v.name: v for v in f.virtual_clusters(objects(QUEUES), [], None) or []}
    reason = f.waiting_reason(JOB, vc=known["research"], events=[], related={})
    assert reason == "queue research: 6 of 8 GPUs in use, needs 4"


def test_stop_steps_per_flavor() -> None:
    primary = {"metadata": {"name": NAMES.base, "uid": "u1"}}
    (volcano,) = flavor("volcano").stop_steps(primary, NAMES)
    assert (volcano.op, volcano.kind, volcano.body["action"]) == (
        "create",
        VOLCANO_COMMAND,
        "AbortJob",
    )
    native = flavor("native").stop_steps(primary, NAMES)
    assert [(s.op, s.kind) for s in native] == [("patch", BATCH_JOB)] * 2 + [("delete_pods", None)]
    assert all(s.body == {"spec": {"suspend": True}} for s in native[:2])
    (kueue,) = flavor("kueue").stop_steps(primary, NAMES)
    # Kueue resumes an admitted JobSet that is suspended: its Workload is deactivated.
    assert (kueue.op, kueue.kind, kueue.name, kueue.body) == (
        "patch_owned",
        KUEUE_WORKLOAD,
        NAMES.base,
        {"spec": {"active": False}},
    )
    assert [s.op for s in flavor("hived").stop_steps(primary, NAMES)] == ["delete_pods"]


@pytest.mark.parametrize("name", sorted(FLAVORS))
def test_a_job_whose_controller_missed_its_pod_group_admission_is_prompted(name: str) -> None:
    """Volcano's job controller ignores a PodGroup that reaches Inqueue while its watch is
    down; such a job (Pending, PodGroup admitted, no pods) gets a SyncJob command. Other
    flavors never report a missed event."""
    f = flavor(name)
    primary = {
        "apiVersion": f.primary_kind.api_version,
        "kind": f.primary_kind.kind,
        "metadata": {"name": NAMES.base, "uid": "u1"},
        "status": {"state": {"phase": "Pending"}},
    }
    group = {"metadata": {"name": "pg"}, "status": {"phase": "Inqueue"}}
    related = {VOLCANO_POD_GROUP: [group]}
    pending = {**group, "status": {"phase": "Pending"}}
    if name != "volcano":
        assert not f.missed_event(primary, related, 0)
        assert f.resync_steps(primary, NAMES) == []
        return
    assert f.missed_event(primary, related, 0)
    assert not f.missed_event(primary, related, 1)  # its pods exist
    assert not f.missed_event(primary, {VOLCANO_POD_GROUP: [pending]}, 0)  # not admitted
    running = {**primary, "status": {"state": {"phase": "Running"}}}
    assert not f.missed_event(running, related, 0)
    [step] = f.resync_steps(primary, NAMES)
    assert (step.op, step.kind) == ("create", VOLCANO_COMMAND)
    assert step.body["action"] == "SyncJob"
    assert step.body["target"] == {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "name": NAMES.base,
        "uid": "u1",
        "controller": True,
    }


def _workload(active: bool, evicted: str | None) -> dict[str, Any]:
    conditions = [{"type": "Admitted", "status": "True"}]
    if evicted is not None:
        conditions.append(
            {"type": "Evicted", "status": evicted, "lastTransitionTime": "2026-01-01T00:00:05Z"}
        )
    return {
        "metadata": {"name": "w"},
        "spec": {"active": active},
        "status": {"conditions": conditions},
    }


def test_an_eviction_is_seen_before_the_pods_go_where_the_scheduler_marks_it() -> None:
    """Kueue marks the Workload Evicted before the JobSet's pods are deleted; a stop
    (deactivation) is no eviction the job outlives; other flavors have no such mark."""
    kueue = FLAVORS["kueue"](OPTIONS)
    assert kueue.eviction_kind == KUEUE_WORKLOAD
    assert kueue.evicted_at(_workload(True, "True")) == "2026-01-01T00:00:05Z"
    assert kueue.evicted_at(_workload(False, "True")) is None
    assert kueue.evicted_at(_workload(True, "False")) is None
    assert kueue.evicted_at(_workload(True, None)) is None
    for name in ("native", "volcano", "hived"):
        flavor = FLAVORS[name](OPTIONS)
        assert flavor.eviction_kind is None
        assert flavor.evicted_at(_workload(True, "True")) is None


def test_vc_schedulers_mark_on_a_pod_it_is_about_to_evict() -> None:
    """vc-scheduler writes Ready False (reason Evict) on a pod, then deletes it."""
    evicted = {"status": {"conditions": [{"type": "Ready", "status": "False", "reason": "Evict"}]}}
    unready = {"status": {"conditions": [{"type": "Ready", "status": "False", "reason": "x"}]}}
    volcano = FLAVORS["volcano"](OPTIONS)
    assert volcano.pod_evicted(evicted)
    assert not volcano.pod_evicted(unready) and not volcano.pod_evicted({})
    for name in ("native", "kueue", "hived"):
        assert not FLAVORS[name](OPTIONS).pod_evicted(evicted)


def test_a_hostile_scheduling_spec_counts_as_none() -> None:
    """HiveD's pod annotation is written by whoever made the pod: read bounded (length, no
    aliases, depth) and typed, never raising; a spec it cannot read counts no cells, so the
    pod's own GPU requests count instead."""
    import time

    from jupyter_pai.backends.kubernetes.flavors.hived import (
        SPEC_ANNOTATION,
        HivedFlavor,
        HivedSettings,
        read_scheduling_spec,
    )

    flavor = HivedFlavor(PodOptions(namespace="alice"), HivedSettings(cpu_sku="CPU"))

    def gpus(text: object) -> int | None:
        return flavor.pod_gpus({"metadata": {"annotations": {SPEC_ANNOTATION: text}}})

    assert gpus("virtualCluster: default\nleafCellNumber: 2\nleafCellType: DT\n") == 2
    assert gpus("leafCellNumber: 4\nleafCellType: CPU\n") == 0  # CPU cells are no GPUs
    laughs = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]\n"
        for i in range(9)
    )
    started = time.perf_counter()
    for hostile in (
        laughs,  # a billion laughs
        "[" * 3000 + "]" * 3000,  # deeper than the composer's recursion
        "leafCellNumber: " + "9" * 5000,  # longer than any spec
        "- leafCellNumber: 2",  # a list
        "leafCellNumber: lots",  # not a count
        "leafCellNumber: true",
        "leafCellNumber: -3",
        "leafCellNumber: 1\nleafCellType: [DT]",
        "{{ not yaml",
        12,  # not text at all
    ):
        assert gpus(hostile) is None, hostile
    assert time.perf_counter() - started < 0.5
    assert read_scheduling_spec("leafCellNumber:") == (0, None)
