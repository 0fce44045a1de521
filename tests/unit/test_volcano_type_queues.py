"""A Volcano VC split by GPU type: a queue per type, listed as one VC with a row per type,
and the queue a job goes into (one type per job; a GPU job must name one)."""

from __future__ import annotations

from typing import Any

import pytest

from jupyter_pai.backends.kubernetes.flavors.volcano import VolcanoFlavor
from jupyter_pai.backends.kubernetes.flavors.volcano_queues import (
    VOLCANO_QUEUE,
    queue_manifest,
    queue_virtual_clusters,
    type_queue_name,
)
from jupyter_pai.backends.kubernetes.pods import PodOptions
from jupyter_pai.backends.models import JobState, JobSummary, Resources
from jupyter_pai.errors import SpecError
from jupyter_pai.spec import parse_job

GPU = "nvidia.com/gpu"


def _used(queue: dict[str, Any], gpus: int) -> dict[str, Any]:
    return {**queue, "status": {"allocated": {GPU: str(gpus)}, "state": "Open"}}


QUEUES = [
    _used(queue_manifest("research", 6, borrow=False, gpu_type="A100-40GB"), 4),
    _used(queue_manifest("research", 2, borrow=False, gpu_type="H100-80GB"), 2),
    _used(queue_manifest("default", 8), 0),
]


def _flavor() -> VolcanoFlavor:
    flavor = VolcanoFlavor(PodOptions(namespace="alice"))
    flavor.cluster_objects = lambda kind: QUEUES if kind == VOLCANO_QUEUE else []
    return flavor


def _job(gpus: Any, **more: Any) -> Any:
    doc = {"name": "j", "image": "x", "command": ["true"], "gpus": gpus, "vc": "research"}
    return parse_job({**doc, **more}).job


def test_type_queue_names_are_dns_names() -> None:
    assert type_queue_name("research", "A100-40GB-MIG-1g.5gb") == "research-a100-40gb-mig-1g.5gb"
    manifest = queue_manifest("research", 2, gpu_type="H100-80GB")
    assert manifest["metadata"] == {
        "name": "research-h100-80gb",
        "labels": {
            "jupyter-pai.io/virtual-cluster": "research",
            "jupyter-pai.io/gpu-type": "H100-80GB",
        },
    }


def test_a_split_vc_is_one_row_with_a_row_per_type() -> None:
    jobs = [
        JobSummary.model_construct(virtual_cluster="research", state=JobState.RUNNING),
        JobSummary.model_construct(
            virtual_cluster="research", state=JobState.WAITING, total_gpu_number=2
        ),
    ]
    vcs = {v.name: v for v in queue_virtual_clusters(QUEUES, jobs, Resources(gpu=16), GPU)}
    assert sorted(vcs) == ["default", "research"]
    research = vcs["research"]
    assert (research.capacity.gpu, research.used.gpu, research.free.gpu) == (8, 6, 2)
    assert research.guaranteed_gpus == 8
    assert (research.running_jobs, research.queued_jobs, research.queued.gpu) == (1, 1, 2)
    rows = {t.name: (t.capacity, t.used, t.free) for t in research.gpu_types}
    assert rows == {"A100-40GB": (6, 4, 2), "H100-80GB": (2, 2, 0)}
    assert not vcs["default"].gpu_types  # untyped: the backend adds the cluster's types


def test_a_typed_job_goes_into_its_types_queue() -> None:
    flavor = _flavor()
    assert flavor.queue(_job("H100-80GB:1")) == "research-h100-80gb"
    assert flavor.queue(_job(0)) == "research-a100-40gb"  # no GPUs: no type's quota
    assert flavor.queue(parse_job({"name": "j", "image": "x", "command": ["true"]}).job) == (
        "default"
    )


@pytest.mark.parametrize(
    ("job", "message"),
    [
        (
            lambda: _job(2),
            "virtual cluster research holds its GPUs per type (A100-40GB, H100-80GB): name "
            "the type, e.g. gpuType: A100-40GB or --gpus A100-40GB:N",
        ),
        (
            lambda: _job("T4:1"),
            "virtual cluster research holds no T4 GPUs; its types: A100-40GB, H100-80GB",
        ),
    ],
)
def test_a_job_the_split_vc_cannot_queue_is_refused_naming_the_field(
    job: Any, message: str
) -> None:
    with pytest.raises(SpecError) as refused:
        _flavor().queue(job())
    [error] = refused.value.errors
    assert error.path == "extras.hivedScheduler.taskRoles.worker.skuType"
    assert error.message == message


def test_one_type_per_job_in_a_split_vc() -> None:
    job = parse_job(
        """
protocolVersion: 2
name: mixed
type: job
defaults: {virtualCluster: research}
taskRoles:
  a: {instances: 1, commands: [x], resourcePerInstance: {gpu: 1}}
  b: {instances: 1, commands: [x], resourcePerInstance: {gpu: 1}}
extras:
  hivedScheduler:
    taskRoles:
      a: {skuType: A100-40GB}
      b: {skuType: H100-80GB}
"""
    ).job
    with pytest.raises(SpecError) as refused:
        _flavor().queue(job)
    [error] = refused.value.errors
    assert error.path == "extras.hivedScheduler.taskRoles.b.skuType"
    assert "takes one GPU type (a queue per type): its roles name A100-40GB and H100-80GB" in (
        error.message
    )
