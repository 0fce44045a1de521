"""HiveD in the test control plane, for real: hivedscheduler (OpenPAI's extender, 2020,
Kubernetes 1.15 libraries) behind a second kube-scheduler v1.36 whose profile
`hivedscheduler` calls it to filter, bind and preempt. Its VCs come from the cluster's
nodes; a `hived` job's tasks on the runner node print the GPUs HiveD bound them to
(`CUDA_VISIBLE_DEVICES`, set by the pod runner from HiveD's isolation annotation); a job
its VC cannot hold waits, saying so in HiveD's words."""

from __future__ import annotations

import asyncio
import json
import time
import urllib.request
from typing import Any

import pytest
import yaml

from jupyter_pai.backends.kubernetes.naming import make_names
from jupyter_pai.backends.models import JobState
from jupyter_pai.errors import SpecError, Unavailable
from jupyter_pai.spec import parse_job
from tests.cluster import kube
from tests.cluster.pytest_plugin import TestCluster

from .test_backend_jobs import GPU_POOL, NS, RUNNER, _cleanup, make_backend, read_log, wait_for

pytestmark = pytest.mark.kube

PRINTS_GPUS = """
protocolVersion: 2
name: {name}
type: job
defaults: {{virtualCluster: {vc}}}
taskRoles:
  worker:
    instances: {n}
    resourcePerInstance: {{cpu: 1, memoryMB: 256, gpu: {gpu}}}
    commands: ['echo "gpus=$CUDA_VISIBLE_DEVICES"', 'sleep {seconds}']
"""
ISOLATION = "hivedscheduler.microsoft.com/pod-leaf-cell-isolation"
SPEC = "hivedscheduler.microsoft.com/pod-scheduling-spec"


def cpu_cells(cluster: TestCluster) -> dict[str, int]:
    """CPU cells per VC: the test cluster gives each VC half the runner node's CPUs, and
    `research` one GPU node's CPUs, `default` the other GPU nodes'."""
    core = kube.core(cluster.api())

    def cpus(node: str) -> int:
        return int(core.read_node(node).status.capacity["cpu"])

    half = cpus(cluster.runner_nodes[0]) // 2
    per_gpu_node = cpus(cluster.gpu_nodes[0])
    return {
        "research": half + per_gpu_node,
        "default": half + per_gpu_node * (len(cluster.gpu_nodes) - 1),
    }


def hived_status(cluster: TestCluster) -> dict[str, Any]:
    url = f"{cluster.hived_url}/v1/inspect/clusterstatus/virtualclusters/"
    with urllib.request.urlopen(url, timeout=5) as response:
        return dict(json.loads(response.read()))


def test_hived_serves_the_vcs_built_from_the_nodes(kube_cluster: TestCluster) -> None:
    assert sorted(hived_status(kube_cluster)) == ["default", "research"]


async def test_a_hived_jobs_tasks_see_the_gpus_hived_bound(kube_cluster: TestCluster) -> None:
    _cleanup(kube_cluster, NS)
    b = make_backend(kube_cluster, "hived", node_selector=RUNNER)
    await b.start()
    try:
        # The tasks must overlap: HiveD frees a group's cells once its bound pods have
        # completed, so a 1 s task could end before its peer is bound and the peer be
        # placed again on the same two GPUs (seen once: ['0', '1', '0', '1']).
        job = parse_job(PRINTS_GPUS.format(name="gpus", vc="default", n=2, gpu=2, seconds=10)).job
        submitted = await b.submit(job)
        done = await wait_for(b, submitted.id, lambda d: d.state.terminal, 60)
        assert done.state == JobState.SUCCEEDED, done
        core = kube.core(kube_cluster.api())
        names = make_names(job, "alice")
        seen = []
        for task in done.tasks:
            assert task.node == "runner-0"
            pod = core.read_namespaced_pod(names.pod_host("worker", task.index), NS)
            bound = pod.metadata.annotations[ISOLATION]
            log = await read_log(b, done.id, "worker", task.index)
            assert f"gpus={bound}\n" in log, (log, bound)
            seen += bound.split(",")
        print(f"\nHiveD bound {seen} on runner-0 (4 GPUs)")
        assert sorted(seen) == ["0", "1", "2", "3"]  # two tasks x 2 GPUs, disjoint
    finally:
        await b.close()
        _cleanup(kube_cluster, NS)


async def test_a_job_its_vc_cannot_hold_waits_in_hiveds_words(kube_cluster: TestCluster) -> None:
    """Without ``hived_url`` (nothing to check against at submission) HiveD says it. The
    job names its GPU SKU: HiveD has CPU cells too."""
    _cleanup(kube_cluster, NS)
    b = make_backend(kube_cluster, "hived", node_selector=GPU_POOL, hived_url="")
    await b.start()
    try:
        # research holds one node of 8 GPUs: two 8-GPU pods never fit at once.
        text = PRINTS_GPUS.format(name="big", vc="research", n=2, gpu=8, seconds=60)
        job = parse_job(
            text + "extras: {hivedScheduler: {taskRoles: {worker: {skuType: DT}}}}\n"
        ).job
        submitted = await b.submit(job)
        reason = (
            "HiveD: insufficient capacity when scheduling in VC research; the job needs 16 GPUs"
        )
        waiting = await wait_for(b, submitted.id, lambda d: d.waiting_reason == reason, 30)
        assert waiting.state == JobState.WAITING
        await asyncio.sleep(2)
        assert all(t.node is None for t in (await b.get_job(submitted.id)).tasks)  # gang: none
    finally:
        await b.close()
        _cleanup(kube_cluster, NS)


async def test_a_task_without_gpus_is_refused_without_a_cpu_sku(kube_cluster: TestCluster) -> None:
    """HiveD's filter answers 400 "LeafCellNumber is non-positive" for a pod asking no GPU
    cell, so where the server names no CPU SKU the pod would wait for good: the flavor
    refuses such a job at once."""
    b = make_backend(kube_cluster, "hived", node_selector=RUNNER, hived_cpu_sku="")
    await b.start()
    try:
        job = parse_job(PRINTS_GPUS.format(name="nogpu", vc="default", n=1, gpu=0, seconds=1)).job
        with pytest.raises(SpecError) as refused:
            await b.submit(job)
        assert refused.value.errors[0].path == "taskRoles.worker.resourcePerInstance.gpu"
        assert "at least 1 GPU" in refused.value.errors[0].message
        assert not await b.list_jobs()  # nothing half-created
    finally:
        await b.close()


async def test_the_vcs_listed_and_checked_are_hiveds_with_their_cells_in_use(
    kube_cluster: TestCluster,
) -> None:
    """With ``hived_url`` the VC rows are HiveD's (GPUs = the VC's leaf cells, used = those
    bound to pods), and a submission is checked against them: an unknown VC or more GPUs
    than the VC has are refused at once, naming the field, with nothing created."""
    _cleanup(kube_cluster, NS)
    b = make_backend(kube_cluster, "hived", node_selector=RUNNER)  # with HiveD's URL, CPU SKU
    await b.start()
    try:
        gpu_nodes = len(kube_cluster.gpu_nodes)
        rows = {v.name: v for v in await b.virtual_clusters()}
        assert sorted(rows) == ["default", "research"]
        # research: one 8-GPU node; default: the other GPU nodes and the runner's 4 GPUs.
        assert rows["research"].capacity.gpu == 8
        assert rows["default"].capacity.gpu == (gpu_nodes - 1) * 8 + 4
        assert rows["default"].used.gpu == rows["research"].used.gpu == 0
        cpus = cpu_cells(kube_cluster)["research"]
        assert (
            rows["research"].description == f"HiveD virtual cluster: 8 DT cells, {cpus} CPU cells"
        )

        job = parse_job(PRINTS_GPUS.format(name="cells", vc="default", n=2, gpu=2, seconds=20)).job
        submitted = await b.submit(job)
        await wait_for(
            b, submitted.id, lambda d: all(t.node for t in d.tasks) or d.state.terminal, 60
        )
        # HiveD's answer is reused for 2 s, so the rows catch up within a few seconds.
        deadline = time.monotonic() + 10
        while True:
            rows = {v.name: v for v in await b.virtual_clusters()}
            if rows["default"].used.gpu == 4 or time.monotonic() > deadline:
                break
            await asyncio.sleep(0.5)
        assert rows["default"].used.gpu == 4, (rows["default"], hived_status(kube_cluster))
        assert rows["default"].free.gpu == rows["default"].capacity.gpu - 4
        assert rows["default"].running_jobs == 1
        assert rows["research"].used.gpu == 0

        for vc, gpu, path, words in (
            ("nope", 1, "defaults.virtualCluster", "choose one of default, research"),
            ("research", 8, "taskRoles.worker.resourcePerInstance.gpu", "has 8"),
        ):
            refused_job = parse_job(
                PRINTS_GPUS.format(name="refused", vc=vc, n=2, gpu=gpu, seconds=1)
            )
            with pytest.raises(SpecError) as refused:
                await b.submit(refused_job.job)
            assert refused.value.errors[0].path == path
            assert words in refused.value.errors[0].message, refused.value.errors[0].message
        assert [j.id for j in await b.list_jobs()] == [submitted.id]  # nothing half-created
    finally:
        await b.close()
        _cleanup(kube_cluster, NS)


async def test_an_unreachable_hived_is_named_with_the_setting_to_check(
    kube_cluster: TestCluster,
) -> None:
    b = make_backend(kube_cluster, "hived", hived_url="http://127.0.0.1:9")
    await b.start()
    try:
        with pytest.raises(Unavailable, match=r"cannot be read.*KubernetesBackend\.hived_url"):
            await b.virtual_clusters()
    finally:
        await b.close()


MIXED = """
protocolVersion: 2
name: mixed
type: job
defaults: {virtualCluster: default}
taskRoles:
  ps:
    instances: 1
    resourcePerInstance: {cpu: 2, memoryMB: 256, gpu: 0}
    commands: ['echo "ps gpus=${CUDA_VISIBLE_DEVICES-none}"', 'sleep 10']
  worker:
    instances: 1
    resourcePerInstance: {cpu: 1, memoryMB: 256, gpu: 1}
    commands: ['echo "worker gpus=$CUDA_VISIBLE_DEVICES"', 'sleep 10']
"""


async def test_a_task_without_gpus_runs_on_the_cpu_cells(kube_cluster: TestCluster) -> None:
    """With ``hived_cpu_sku`` a task without GPUs asks HiveD for cells of the CPU SKU (one
    per CPU) and sees no GPU; the VC row counts its CPU cells in use."""
    _cleanup(kube_cluster, NS)
    b = make_backend(kube_cluster, "hived", node_selector=RUNNER)  # with HiveD's URL, CPU SKU
    await b.start()
    try:
        submitted = await b.submit(parse_job(MIXED).job)
        running = await wait_for(
            b, submitted.id, lambda d: all(t.node for t in d.tasks) or d.state.terminal, 60
        )
        pod = kube.core(kube_cluster.api()).read_namespaced_pod(
            make_names(parse_job(MIXED).job, "alice").pod_host("ps", 0), NS
        )
        spec = yaml.safe_load(pod.metadata.annotations[SPEC])
        assert (spec["leafCellType"], spec["leafCellNumber"]) == ("CPU", 2)
        deadline = time.monotonic() + 10
        while True:
            default = {v.name: v for v in await b.virtual_clusters()}["default"]
            if default.used.cpu == 2 or time.monotonic() > deadline:
                break
            await asyncio.sleep(0.5)
        assert (default.used.gpu, default.used.cpu) == (1, 2), default
        cpus = cpu_cells(kube_cluster)["default"]
        assert default.capacity.cpu == cpus and f"{cpus} CPU cells" in default.description
        # Read while both run: the first role to end completes the job (OpenPAI's default
        # policy), and the other's pod goes.
        logs = {"ps": "", "worker": ""}
        while time.monotonic() < deadline + 10 and not all(logs.values()):
            logs = {r: await read_log(b, submitted.id, r, 0) for r in logs}
            await asyncio.sleep(0.5)
        assert logs["ps"] == "ps gpus=none\n", logs
        assert logs["worker"].startswith("worker gpus=") and logs["worker"] != "worker gpus=\n"
        done = await wait_for(b, submitted.id, lambda d: d.state.terminal, 60)
        assert done.state == JobState.SUCCEEDED, running
    finally:
        await b.close()
        _cleanup(kube_cluster, NS)
