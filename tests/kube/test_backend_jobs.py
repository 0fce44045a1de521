"""The Kubernetes backend on the real control plane, once per flavor that runs end to end
(``flavor``: ``native`` on kube-scheduler's gang scheduling, ``volcano`` on Volcano v1.15.1).

Pods on the runner node really run as local processes; pods on the simulated GPU pool stay
Running until deleted, which is what the capacity tests need."""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from jupyter_pai.backends.base import LogQuery
from jupyter_pai.backends.kubernetes import KubernetesBackend
from jupyter_pai.backends.kubernetes.flavors.hived import SPEC_ANNOTATION as HIVED_SPEC
from jupyter_pai.backends.kubernetes.naming import make_names
from jupyter_pai.backends.models import JobDetail, JobState, TaskState
from jupyter_pai.errors import BadRequest, Conflict, Forbidden, NotFound, SpecError
from jupyter_pai.spec import parse_job
from tests.cluster import hived as cluster_hived
from tests.cluster import kube, manifests
from tests.cluster.pytest_plugin import TestCluster

pytestmark = pytest.mark.kube
NS = "alice"
RUNNER = {manifests.RUNNER_LABEL: "true"}
GPU_POOL = {manifests.POOL_LABEL: "gpu"}
OWNED_KEY, OWNED_VALUE = "app.kubernetes.io/managed-by", "jupyter-pai"
OWNED = f"{OWNED_KEY}={OWNED_VALUE}"


#: The flavors whose jobs run on the test cluster; every test that runs jobs runs per flavor.
FLAVORS = ("native", "volcano", "kueue", "hived")


@pytest.fixture(params=FLAVORS)
def flavor(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _cleanup(cluster: TestCluster, namespace: str) -> None:
    api = cluster.api()
    core, batch = client.CoreV1Api(api), client.BatchV1Api(api)
    batch.delete_collection_namespaced_job(
        namespace, label_selector=OWNED, propagation_policy="Background"
    )
    custom = client.CustomObjectsApi(api)
    for group, version, plural in (
        ("batch.volcano.sh", "v1alpha1", "jobs"),
        ("bus.volcano.sh", "v1alpha1", "commands"),
        ("jobset.x-k8s.io", "v1alpha2", "jobsets"),
    ):
        custom.delete_collection_namespaced_custom_object(
            group, version, namespace, plural, propagation_policy="Background"
        )
    core.delete_collection_namespaced_config_map(namespace, label_selector=OWNED)
    # The garbage collector would remove these after their job, but maybe not before the next
    # test submits a job of the same name (409): a job's Secret, and JobSet's own Service.
    core.delete_collection_namespaced_secret(namespace, label_selector=OWNED)
    core.delete_collection_namespaced_pod(namespace, label_selector=OWNED, grace_period_seconds=0)
    services = core.list_namespaced_service(namespace).items
    for svc in services:
        owned = (svc.metadata.labels or {}).get(OWNED_KEY) == OWNED_VALUE
        if not owned and not any(o.kind == "JobSet" for o in svc.metadata.owner_references or []):
            continue
        try:
            core.delete_namespaced_service(svc.metadata.name, namespace)
        except ApiException as error:  # the garbage collector got there first
            if error.status != 404:
                raise


def flavor_settings(cluster: TestCluster, flavor: str) -> dict[str, str]:
    """The backend settings a flavor needs on ``cluster`` (hived: its HiveD's address, a
    test may start a cluster of its own, and the CPU SKU of its configuration)."""
    if flavor == "hived":
        return {"hived_url": cluster.hived_url, "hived_cpu_sku": cluster_hived.CPU_SKU}
    return {}


def make_backend(
    cluster: TestCluster, flavor: str, user: str = "alice", **kwargs: Any
) -> KubernetesBackend:
    kwargs.setdefault("node_selector", RUNNER)
    kwargs = {**flavor_settings(cluster, flavor), **kwargs}
    return KubernetesBackend(
        kubeconfig=str(cluster.user_kubeconfigs[user]), flavor=flavor, user=user, **kwargs
    )


@pytest.fixture
async def backend(kube_cluster: TestCluster, flavor: str) -> AsyncIterator[KubernetesBackend]:
    _cleanup(kube_cluster, NS)
    b = make_backend(kube_cluster, flavor)
    await b.start()
    yield b
    await b.close()
    _cleanup(kube_cluster, NS)


def gang_sizes(cluster: TestCluster, flavor: str, base: str) -> list[int]:
    """The gang size of each pod group of job ``base``: kube-scheduler's PodGroups (native,
    labelled with the job), the one Volcano's controller made for the vcjob (owned by it),
    or the pods of Kueue's Workload for the JobSet (admitted all at once)."""
    custom = client.CustomObjectsApi(cluster.api())
    if flavor == "kueue":  # Kueue admits the Workload's pod sets (one per role) together
        workloads = custom.list_namespaced_custom_object(
            "kueue.x-k8s.io", "v1beta2", NS, "workloads"
        )["items"]
        return [
            sum(int(p["count"]) for p in w["spec"]["podSets"])
            for w in workloads
            if any(o["name"] == base for o in w["metadata"].get("ownerReferences") or [])
        ]
    if flavor == "hived":  # HiveD's affinity groups, named in each pod's scheduling spec
        pods = kube.core(cluster.api()).list_namespaced_pod(
            NS, label_selector=f"jupyter-pai.io/job={base}"
        )
        specs = [
            yaml.safe_load(p.metadata.annotations[HIVED_SPEC])["affinityGroup"] for p in pods.items
        ]
        groups = {g["name"]: sum(m["podNumber"] for m in g["members"]) for g in specs}
        return sorted(groups.values())
    if flavor == "volcano":
        groups = custom.list_namespaced_custom_object(
            "scheduling.volcano.sh", "v1beta1", NS, "podgroups"
        )["items"]
        return [
            g["spec"]["minMember"]
            for g in groups
            if any(o["name"] == base for o in g["metadata"].get("ownerReferences") or [])
        ]
    groups = custom.list_namespaced_custom_object(
        "scheduling.k8s.io",
        "v1alpha2",
        NS,
        "podgroups",
        label_selector=f"jupyter-pai.io/job={base}",
    )["items"]
    return [g["spec"]["schedulingPolicy"]["gang"]["minCount"] for g in groups]


async def wait_for(
    backend: KubernetesBackend,
    job_id: str,
    check: Callable[[JobDetail], bool],
    timeout: float = 60,
    explain: Callable[[], str] | None = None,
) -> JobDetail:
    """``explain``: what the cluster says of the job's pods, added to a timeout's message."""
    deadline = time.monotonic() + timeout
    detail = await backend.get_job(job_id)
    while time.monotonic() < deadline:
        detail = await backend.get_job(job_id)
        if check(detail):
            return detail
        await asyncio.sleep(0.3)
    tasks = [(t.role, t.index, t.state.value, t.node) for t in detail.tasks]
    raise AssertionError(
        f"timed out: {job_id} is {detail.state} ({detail.sub_state}; {detail.waiting_reason});"
        f" tasks {tasks}" + (f"\n{explain()}" if explain else "")
    )


async def read_log(
    backend: KubernetesBackend, job_id: str, role: str, index: int, **kw: Any
) -> str:
    stream = await backend.logs(job_id, LogQuery(role=role, index=index, **kw))
    return b"".join([c async for c in stream.chunks]).decode()


PS_WORKER = """
protocolVersion: 2
name: {name}
type: job
secrets: {{token: s3cr3t-value}}
taskRoles:
  ps:
    instances: 1
    completion: {{minSucceededInstances: -1}}
    resourcePerInstance: {{cpu: 1, memoryMB: 256, gpu: 0}}
    commands:
      - >-
        python -c "import os, socket; s = socket.socket();
        s.bind((os.environ['PAI_CURRENT_CONTAINER_IP'], int(os.environ['PAI_CURRENT_CONTAINER_PORT'])));
        s.listen(); print('ps listening', flush=True);
        [print('ps got', s.accept()[0].recv(100).decode(), flush=True) for _ in range(3)]"
  worker:
    instances: 3
    resourcePerInstance: {{cpu: 1, memoryMB: 256, gpu: 1}}
    commands:
      - env | grep -E '^(PAI_|RANK|WORLD_SIZE|MASTER_|LOCAL_RANK)' | sort
      - echo "token=<% $secrets.token %>"
      - >-
        python -c "import os, socket, time; host, port = os.environ['PAI_TASK_ROLE_ps_HOST_LIST'].split(':');
        deadline = time.time() + 30
        ;exec('while True:\\n try:\\n  c = socket.create_connection((host, int(port))); break\\n except OSError:\\n  assert time.time() < deadline; time.sleep(0.3)');
        c.sendall(('rank ' + os.environ['RANK']).encode()); print('connected to', host, port);
        c.recv(1); time.sleep(2)"
"""
# Workers end 2 s after the ps has read them (it closes each connection): once every
# worker has succeeded the job is decided and the ps, if still running, is stopped with
# its log (Volcano's CompleteJob deletes it at once), so the ps must have ended first.


async def test_distributed_job_runs_with_the_contract_and_reaches_the_ps(
    backend: KubernetesBackend, kube_cluster: TestCluster
) -> None:
    job = parse_job(PS_WORKER.format(name="dist")).job
    submitted = await backend.submit(job)
    assert submitted.id == "alice~dist" and submitted.state == JobState.WAITING
    # Gang: the pods were created in one PodGroup that needs all four (Volcano deletes its
    # PodGroup once the job has ended, so it is read while the job runs).
    base = make_names(job, "alice").base
    hived = backend.flavor == "hived"
    deadline = time.monotonic() + 30
    while not gang_sizes(kube_cluster, backend.flavor, base):
        assert time.monotonic() < deadline, "no PodGroup for the job"
        await asyncio.sleep(0.1)
    # HiveD places an affinity group on one SKU: the GPU workers are one gang, the ps
    # (CPU cells) another.
    assert gang_sizes(kube_cluster, backend.flavor, base) == ([1, 3] if hived else [4])
    done = await wait_for(backend, submitted.id, lambda d: d.state.terminal, 90)
    assert done.state == JobState.SUCCEEDED, done
    ps_host = f"{done.tasks[0].ip}"
    assert ps_host.startswith("127.")
    env_hosts = None
    for i in range(3):
        log = await read_log(backend, done.id, "worker", i)
        lines = dict(
            line.split("=", 1)
            for line in log.splitlines()
            if "=" in line and line.startswith(("PAI_", "RANK", "WORLD", "MASTER", "LOCAL"))
        )
        assert lines["PAI_CURRENT_TASK_ROLE_NAME"] == "worker"
        assert lines["PAI_CURRENT_TASK_ROLE_CURRENT_TASK_INDEX"] == str(i)
        assert lines["RANK"] == str(i + 1) and lines["WORLD_SIZE"] == "4"
        assert lines["PAI_JOB_NAME"] == "alice~dist" and lines["PAI_USER_NAME"] == "alice"
        assert lines["PAI_TASK_ROLE_TASK_COUNT_worker"] == "3"
        assert lines["PAI_CURRENT_CONTAINER_IP"] == done.tasks[1 + i].ip
        ps_list = lines["PAI_TASK_ROLE_ps_HOST_LIST"]
        assert lines["MASTER_ADDR"] == ps_list.split(":")[0]
        # OpenPAI's ports: every task holds ssh and http; host lists use http.
        ports = done.tasks[1 + i].ports
        assert list(ports) == ["ssh", "http"]
        assert ps_list.split(":")[1] == str(done.tasks[0].ports["http"][0])
        assert lines["PAI_CURRENT_CONTAINER_PORT"] == str(ports["http"][0])
        assert lines["PAI_CONTAINER_SSH_PORT"] == str(ports["ssh"][0])
        assert lines["PAI_CONTAINER_HOST_IP"] == done.tasks[1 + i].ip
        assert lines["PAI_CONTAINER_HOST_PORT_LIST"] == (
            f"ssh:{ports['ssh'][0]};http:{ports['http'][0]};"
        )
        assert lines["PAI_FRAMEWORK_NAME"] == "alice~dist" and lines["PAI_TASKS_NUM"] == "4"
        assert lines["PAI_RESOURCE_worker"] == "1,1,256,0"
        assert lines["PAI_WORK_DIR"]
        env_hosts = env_hosts or ps_list
        assert f"connected to {ps_list.split(':')[0]} {ps_list.split(':')[1]}" in log
        assert "token=******" in log and "s3cr3t-value" not in log
    ps_log = await read_log(backend, done.id, "ps", 0)
    assert sorted(line for line in ps_log.splitlines() if line.startswith("ps got")) == [
        "ps got rank 1",
        "ps got rank 2",
        "ps got rank 3",
    ]
    assert all(t.state == TaskState.SUCCEEDED for t in done.tasks[1:])
    assert [t.node for t in done.tasks] == ["runner-0"] * 4
    events = await backend.events(done.id)
    # The Job controller reports each pod it creates; vc-controller-manager does not.
    created = {"SuccessfulCreate"} if backend.flavor == "native" else set()
    assert {"Scheduled", *created} <= {e.reason for e in events}
    assert any(e.source == "worker-2" for e in events)
    assert "s3cr3t-value" not in str(done.to_json())


SLEEPER = """
protocolVersion: 2
name: {name}
type: job
defaults: {{virtualCluster: {vc}}}
taskRoles:
  worker:
    instances: {n}
    resourcePerInstance: {{cpu: 1, memoryMB: 256, gpu: {gpu}}}
    commands: ['sleep 300']
"""


async def test_a_job_over_the_queue_waits_with_a_reason_then_runs(
    kube_cluster: TestCluster, flavor: str
) -> None:
    b = make_backend(kube_cluster, flavor, node_selector=GPU_POOL)
    await b.start()
    try:
        first = await b.submit(parse_job(SLEEPER.format(name="big", vc="research", n=4, gpu=2)).job)
        await wait_for(b, first.id, lambda d: d.state == JobState.RUNNING)
        second = await b.submit(
            parse_job(SLEEPER.format(name="more", vc="research", n=2, gpu=2)).job
        )
        # Kueue reserves quota per ClusterQueue for admitted Workloads; HiveD says it.
        expected = {
            "kueue": "ClusterQueue research: 8 of 8 GPUs reserved, needs 4",
            "hived": "HiveD: insufficient capacity when scheduling in VC research; "
            "the job needs 4 GPUs",
        }.get(flavor, "queue research: 8 of 8 GPUs in use, needs 4")
        waiting = await wait_for(b, second.id, lambda d: d.waiting_reason == expected, 30)
        assert waiting.state == JobState.WAITING
        listed = {j.id: j for j in await b.list_jobs()}
        assert listed[second.id].waiting_reason == waiting.waiting_reason
        # HiveD's answer is reused for 2 s: the row may trail the binding a moment.
        deadline = time.monotonic() + 10
        while True:
            vcs = {v.name: v for v in await b.virtual_clusters()}
            if vcs["research"].used.gpu == 8 or time.monotonic() > deadline:
                break
            await asyncio.sleep(0.5)
        assert vcs["research"].capacity.gpu == 8 and vcs["research"].used.gpu == 8, vcs
        assert vcs["research"].queued_jobs == 1
        stopped = await b.stop_job(first.id)
        assert stopped.state in (JobState.STOPPING, JobState.STOPPED)
        # Generous bounds for a runner the whole suite keeps busy; a timeout names the job's
        # and tasks' states, and the pods as the cluster has them.
        explain = functools.partial(kube_cluster.explain, NS)
        await wait_for(b, first.id, lambda d: d.state == JobState.STOPPED, 120, explain)
        await wait_for(b, second.id, lambda d: d.state == JobState.RUNNING, 120, explain)
        # Stopped jobs stay listed.
        assert (await b.get_job(first.id)).state == JobState.STOPPED
        assert first.id in {j.id for j in await b.list_jobs()}
    finally:
        await b.close()
        _cleanup(kube_cluster, NS)


async def test_a_job_wider_than_every_node_waits_naming_the_gpus(
    kube_cluster: TestCluster, flavor: str
) -> None:
    b = make_backend(kube_cluster, flavor, node_selector=GPU_POOL)
    await b.start()
    try:
        job = await b.submit(parse_job(SLEEPER.format(name="wide", vc="default", n=1, gpu=16)).job)
        # HiveD answers for its cells: no cell of 16 GPUs in the VC (kube-scheduler's own
        # reason may come first, while HiveD has not been asked yet).
        expected = (
            "HiveD: insufficient capacity when scheduling in VC default; the job needs 16 GPUs"
            if b.flavor == "hived"
            else "no node has 16 free GPUs"
        )
        waiting = await wait_for(
            b, job.id, lambda d: (d.waiting_reason or "").startswith(expected), 30
        )
        assert waiting.state == JobState.WAITING
    finally:
        await b.close()
        _cleanup(kube_cluster, NS)


async def test_asking_for_more_than_the_vc_is_a_400(backend: KubernetesBackend) -> None:
    with pytest.raises(SpecError) as err:
        await backend.submit(parse_job(SLEEPER.format(name="huge", vc="research", n=3, gpu=4)).job)
    assert err.value.errors[0].path == "taskRoles.worker.resourcePerInstance.gpu"
    assert "research" in err.value.message
    with pytest.raises(SpecError) as err:
        await backend.submit(parse_job(SLEEPER.format(name="novc", vc="nope", n=1, gpu=0)).job)
    assert err.value.errors[0].path == "defaults.virtualCluster"
    assert await backend.list_jobs() == []


async def test_a_failing_task_fails_the_job_and_stops_the_rest(backend: KubernetesBackend) -> None:
    spec = """
protocolVersion: 2
name: failing
type: job
taskRoles:
  ps: {instances: 1, completion: {minSucceededInstances: -1}, commands: ['sleep 300'],
       resourcePerInstance: {cpu: 1, memoryMB: 128}}
  worker: {instances: 2, commands: ['test "$PAI_CURRENT_TASK_ROLE_CURRENT_TASK_INDEX" = 0 || exit 7', 'sleep 300'],
           resourcePerInstance: {cpu: 1, memoryMB: 128}}
"""
    job = await backend.submit(parse_job(spec).job)
    done = await wait_for(backend, job.id, lambda d: d.state.terminal, 60)
    assert done.state == JobState.FAILED and done.exit_code == 7
    assert "worker" in (done.sub_state or "")
    failed = next(t for t in done.tasks if t.role == "worker" and t.index == 1)
    assert failed.state == TaskState.FAILED and failed.exit_code == 7
    # The rest (ps, worker 0) is stopped by the backend; the outcome stays FAILED.
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        detail = await backend.get_job(job.id)
        if all(t.state != TaskState.RUNNING for t in detail.tasks):
            break
        await asyncio.sleep(0.3)
    detail = await backend.get_job(job.id)
    assert detail.state == JobState.FAILED
    assert all(t.state != TaskState.RUNNING for t in detail.tasks)


async def test_name_taken_is_409_with_a_suggestion_and_failed_submission_leaves_nothing(
    backend: KubernetesBackend, kube_cluster: TestCluster
) -> None:
    spec = SLEEPER.format(name="dup", vc="default", n=1, gpu=0)
    await backend.submit(parse_job(spec).job)
    with pytest.raises(Conflict) as err:
        await backend.submit(parse_job(spec).job)
    assert "dup-2" in err.value.message
    # A submission the API server refuses half-way leaves no object behind.
    core = client.CoreV1Api(kube_cluster.api())
    before = {
        c.metadata.name for c in core.list_namespaced_config_map(NS, label_selector=OWNED).items
    }
    names = make_names(
        parse_job(SLEEPER.format(name="half", vc="default", n=1, gpu=0)).job, "alice"
    )
    objects = [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": "half-x",
                "labels": {"app.kubernetes.io/managed-by": "jupyter-pai"},
            },
        },
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "half-x"},
            "spec": {"clusterIP": "not-an-ip"},
        },
    ]
    with pytest.raises(BadRequest):
        await backend.lifecycle.create(objects, 0, names)
    after = {
        c.metadata.name for c in core.list_namespaced_config_map(NS, label_selector=OWNED).items
    }
    assert after == before


async def test_another_namespace_is_invisible_and_others_jobs_cannot_be_stopped(
    backend: KubernetesBackend, kube_cluster: TestCluster
) -> None:
    bob = make_backend(kube_cluster, backend.flavor, user="bob")
    await bob.start()
    try:
        job = await bob.submit(parse_job(SLEEPER.format(name="bobs", vc="default", n=1, gpu=0)).job)
        with pytest.raises(NotFound):
            await backend.get_job(job.id)
        with pytest.raises(NotFound):
            await backend.stop_job(job.id)
        assert job.id not in {j.id for j in await backend.list_jobs()}
        # Same namespace, another user: visible, but only its owner may stop it.
        mallory = make_backend(kube_cluster, backend.flavor, user="bob")
        mallory.user = "mallory"
        await mallory.start()
        try:
            with pytest.raises(Forbidden):
                await mallory.stop_job(job.id)
        finally:
            await mallory.close()
    finally:
        await bob.close()
        _cleanup(kube_cluster, "bob")


async def test_storage_browsed_through_a_local_mapping_refuses_traversal(
    kube_cluster: TestCluster, tmp_path: Path
) -> None:
    core = client.CoreV1Api(kube_cluster.api("alice"))
    core.create_namespaced_persistent_volume_claim(
        NS,
        {
            "metadata": {"name": "team-data"},
            "spec": {
                "accessModes": ["ReadWriteMany"],
                "resources": {"requests": {"storage": "1Gi"}},
            },
        },
    )
    root = tmp_path / "team"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "a.txt").write_text("hello")
    (tmp_path / "outside.txt").write_text("secret")
    (root / "escape").symlink_to(tmp_path / "outside.txt")
    b = make_backend(kube_cluster, "native", storage_local_paths={"team-data": str(root)})
    await b.start()
    try:
        deadline = time.monotonic() + 10
        while not any(st.name == "team-data" for st in await b.storages()):
            assert time.monotonic() < deadline, "the claim never appears as a storage"
            await asyncio.sleep(0.2)
        listing = await b.read_storage("team-data", "")
        assert {e.name for e in listing.entries} == {"sub"}  # type: ignore[union-attr]
        content = await b.read_storage("team-data", "sub/a.txt")
        assert b"".join([c async for c in content.chunks]) == b"hello"  # type: ignore[union-attr]
        for bad in ("../outside.txt", "/etc/passwd", "sub/../../outside.txt", "%2e%2e/x"):
            with pytest.raises((BadRequest, Forbidden, NotFound)):
                await b.read_storage("team-data", bad)
        with pytest.raises(Forbidden):
            await b.read_storage("team-data", "escape")
        with pytest.raises(NotFound):
            await b.read_storage("not-mine", "")
    finally:
        await b.close()
        core.delete_namespaced_persistent_volume_claim("team-data", NS)
