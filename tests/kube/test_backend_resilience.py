"""The backend's watch cache across a kube-apiserver outage, on the real control plane:
while the API server is down the backend answers 503 (never its stale copy); once it is
back the job list is current within seconds, including what changed behind its back.
And across an etcd restart (data kept): a submission meanwhile is a clear 503, nothing is
lost, and the list is current within 5 s of etcd's return."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, dynamic
from kubernetes.client.exceptions import ApiException
from kubernetes.dynamic import exceptions as dynamic_errors

from jupyter_pai.backends.kubernetes import KubernetesBackend
from jupyter_pai.backends.kubernetes.naming import LABEL_JOB, make_names
from jupyter_pai.backends.models import JobState
from jupyter_pai.errors import NotFound, Unavailable
from jupyter_pai.spec import parse_job
from tests.cluster import controlplane, processes
from tests.cluster.pytest_plugin import TestCluster, running_cluster
from tests.kube.test_backend_jobs import GPU_POOL, NS, SLEEPER, _cleanup, make_backend, wait_for

pytestmark = pytest.mark.kube

# How fast the backend must notice the outage, and catch up after it.
NOTICE_SECONDS = 5.0
CATCH_UP_SECONDS = 10.0
# How long the cluster's own components (kube-scheduler, the Job controller, the garbage
# collector) may take to recover from the outage: client-go's backoff after a SIGKILLed
# API server, not the backend, sets this.
CLUSTER_RECOVERY_SECONDS = 120.0
# etcd's outage: a submission meanwhile is refused within this, and the list is current
# again this soon after etcd is back.
SUBMIT_DURING_OUTAGE_SECONDS = 40.0
ETCD_CATCH_UP_SECONDS = 5.0
# How long a restarted kube-apiserver may take to serve custom resources again.
CRD_DISCOVERY_SECONDS = 30.0
_DynamicClient: Any = dynamic.DynamicClient  # untyped


@pytest.fixture(scope="module")
def kube_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestCluster]:
    """A cluster of its own: stopping kube-apiserver disturbs the controllers and the pod
    runner for a while after it returns, which must not slow the tests sharing the
    session's cluster (stops there waited on pods the controllers had not yet removed)."""
    with running_cluster(tmp_path_factory.mktemp("kube-cluster-outage")) as cluster:
        yield cluster


@pytest.fixture(scope="module")
def etcd_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestCluster]:
    """Volcano's cluster of its own for etcd's restarts: after the eight API-server
    outages before them, the outage cluster's kube-apiserver may still be loading its
    custom resources' schemas, and vc-scheduler may still count HiveD's last pods on a
    node, either of which would be measured instead of etcd's restart."""
    options = controlplane.Options(tie_to_parent=True, hived=False)
    with running_cluster(tmp_path_factory.mktemp("kube-cluster-etcd"), options) as cluster:
        yield cluster


@pytest.fixture(params=["native", "volcano", "kueue", "hived"])
def flavor(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _job(name: str) -> Any:
    return parse_job(SLEEPER.format(name=name, vc="default", n=2, gpu=1)).job


def _create_directly(cluster: TestCluster, backend: KubernetesBackend, name: str) -> str:
    """Create a job's objects with the Kubernetes client, not through the backend (as
    another server or kubectl would): the backend only learns of it by watching."""
    job = _job(name)
    names = make_names(job, "alice")
    built = backend.scheduler_flavor.build(job, names)
    owner: dict[str, Any] | None = None
    rest = [m for i, m in enumerate(built.objects) if i != built.primary]
    for manifest in [built.primary_object, *rest]:  # the primary first: it owns the rest
        body = json.loads(json.dumps(manifest))
        body["metadata"]["namespace"] = NS
        if owner is not None:
            body["metadata"]["ownerReferences"] = [owner]
        created = _create_retrying(cluster, body, primary=owner is None)
        if owner is None:
            owner = {
                "apiVersion": created.apiVersion,
                "kind": created.kind,
                "name": created.metadata.name,
                "uid": created.metadata.uid,
            }
    return names.job_id


def _create_retrying(cluster: TestCluster, body: dict[str, Any], *, primary: bool) -> Any:
    """Create one object, retrying while a just-restarted kube-apiserver has not yet
    rediscovered its custom resources (503 "Kind=Job not found" for a vcjob, or the kind
    missing from discovery): the cluster's doing, not the backend's. Made after the primary
    (to be owned by it), the job's Service may exist already: Volcano's `svc` plugin makes
    one of the same name for a vcjob."""
    deadline = time.monotonic() + CRD_DISCOVERY_SECONDS
    retried = False
    while True:
        try:
            resource = _DynamicClient(cluster.api("alice")).resources.get(
                api_version=body["apiVersion"], kind=body["kind"]
            )
            try:
                return resource.create(body=body, namespace=NS)
            except dynamic_errors.ConflictError:
                if primary and not retried:
                    raise
                # An attempt that read as failed had created it after all.
                return resource.get(name=body["metadata"]["name"], namespace=NS)
        except (
            dynamic_errors.ServiceUnavailableError,
            dynamic_errors.NotFoundError,
            dynamic_errors.ResourceNotFoundError,
        ):
            if time.monotonic() > deadline:
                raise
            retried = True
            time.sleep(0.2)


def _delete_directly(cluster: TestCluster, backend: KubernetesBackend, job_id: str) -> None:
    primary = backend.cache["primary"].by_index(job_id)[0]
    resource = _DynamicClient(cluster.api("alice")).resources.get(
        api_version=primary["apiVersion"], kind=primary["kind"]
    )
    resource.delete(name=primary["metadata"]["name"], namespace=NS, propagation_policy="Background")


# The scheduler that places each flavor's pods, whose log explains a job that never starts.
SCHEDULER_LOGS = {
    "native": ("kube-scheduler",),
    "volcano": ("vc-scheduler",),
    "kueue": ("kueue-manager",),
    # HiveD decides as kube-scheduler's extender: both sides of that call.
    "hived": ("hivedscheduler", "hived-kube-scheduler"),
}
#: Seconds a job may take to start before an outage. After the earlier cases' API-server
#: outages HiveD (2020, Kubernetes 1.15 client libraries) once placed no job within a
#: minute in a full run on 2 busy cores, while the module alone passes: it gets longer,
#: and both its logs if it still does not.
START_SECONDS = {"hived": 180.0}


def _settled(cluster: TestCluster) -> str | None:
    """None once every GPU node is Ready and untainted, else what is not: a node's lease
    lapses during an outage, so the node controller may taint it for a while afterwards,
    and a case that starts then measures the last case's aftermath, not its own."""
    selector = ",".join(f"{key}={value}" for key, value in GPU_POOL.items())
    for node in cluster.core().list_node(label_selector=selector).items:
        ready = [c.status for c in node.status.conditions or [] if c.type == "Ready"]
        taints = [t.key for t in node.spec.taints or []]
        if ready != ["True"] or taints:
            return f"{node.metadata.name}: Ready={ready} taints={taints}"
    return None


#: The custom resources the flavours' jobs are made of: a restarted kube-apiserver
#: answers "Kind=Job not found" (503) for a while until it serves them again.
CUSTOM_RESOURCES = (
    ("batch.volcano.sh", "v1alpha1", "jobs"),
    ("jobset.x-k8s.io", "v1alpha2", "jobsets"),
)
#: A vcjob created as a dry run: listing one is served before creating one is (a restarted
#: kube-apiserver admits a custom resource only once it has loaded the CRD's schema).
PROBE_VCJOB = {
    "apiVersion": "batch.volcano.sh/v1alpha1",
    "kind": "Job",
    "metadata": {"name": "settled-probe"},
    "spec": {
        "minAvailable": 1,
        "tasks": [
            {
                "name": "probe",
                "replicas": 1,
                "template": {"spec": {"containers": [{"name": "main", "image": "probe"}]}},
            }
        ],
    },
}


def _unserved(cluster: TestCluster) -> str | None:
    """None once the custom resources are served and admitted again and no pod of an
    earlier case is left (Volcano counts a pod still bound to a node, whatever its
    scheduler), else what is not."""
    custom = client.CustomObjectsApi(cluster.api())
    try:
        for group, version, plural in CUSTOM_RESOURCES:
            custom.list_namespaced_custom_object(group, version, NS, plural, limit=1)
        custom.create_namespaced_custom_object(
            "batch.volcano.sh", "v1alpha1", NS, "jobs", PROBE_VCJOB, dry_run="All"
        )
    except ApiException as error:
        return f"custom resources: {error.status} {error.reason}"
    pods = cluster.core().list_namespaced_pod(NS).items
    if pods:
        return f"{len(pods)} pods of earlier cases left, e.g. {pods[0].metadata.name}"
    return None


async def _wait_settled(cluster: TestCluster) -> None:
    """Each case starts on a cluster that has recovered from the last one's outage."""
    deadline = time.monotonic() + CLUSTER_RECOVERY_SECONDS
    while (unsettled := _settled(cluster) or _unserved(cluster)) is not None:
        assert time.monotonic() < deadline, f"the cluster did not settle: {unsettled}"
        await asyncio.sleep(0.5)


async def _wait_running(
    cluster: TestCluster, backend: KubernetesBackend, flavor: str, job_id: str
) -> None:
    """Before the outage, a job runs as on any day; if it does not, say why from the
    scheduler's side, which the job's own waiting reason cannot."""
    timeout = START_SECONDS.get(flavor, 60.0)
    try:
        await wait_for(backend, job_id, lambda d: d.state == JobState.RUNNING, timeout)
    except AssertionError as error:
        logs = [Path(cluster.state.directory) / "logs" / f"{n}.log" for n in SCHEDULER_LOGS[flavor]]
        tails = "".join(f"\n--- {log.name}\n{processes.log_tail(log, 30)}" for log in logs)
        raise AssertionError(f"{error}\nnodes: {_settled(cluster) or 'settled'}{tails}") from error


async def _until_unavailable(backend: KubernetesBackend) -> float:
    start = time.monotonic()
    while True:
        try:
            await backend.list_jobs()
        except Unavailable as error:
            assert "cluster unreachable" in error.message, error.message
            assert error.status == 503
            return time.monotonic() - start
        assert time.monotonic() - start < NOTICE_SECONDS, "still serving the cache"
        await asyncio.sleep(0.1)


@pytest.mark.parametrize("kill", [False, True], ids=["sigterm", "sigkill"])
async def test_apiserver_outage_is_503_then_the_list_is_current_again(
    kube_cluster: TestCluster, flavor: str, kill: bool
) -> None:
    _cleanup(kube_cluster, NS)
    await _wait_settled(kube_cluster)
    b = make_backend(kube_cluster, flavor, node_selector=GPU_POOL)
    await b.start()
    stopped = False
    try:
        # Names of their own per case: the garbage collector may still be removing the
        # objects of the last case's jobs.
        tag = "k" if kill else "t"
        kept = (await b.submit(_job(f"kept-{tag}"))).id
        doomed = (await b.submit(_job(f"doomed-{tag}"))).id
        for job_id in (kept, doomed):
            await _wait_running(kube_cluster, b, flavor, job_id)
        assert {j.id for j in await b.list_jobs()} == {kept, doomed}  # the cache is warm

        kube_cluster.stop_apiserver(kill=kill)
        stopped = True
        noticed = await _until_unavailable(b)
        print(f"503 after {noticed:.2f}s")
        # And it stays so: every read refuses rather than serving the old copy.
        for _ in range(3):
            with pytest.raises(Unavailable, match="cluster unreachable"):
                await b.get_job(kept)
            with pytest.raises(Unavailable):
                await b.list_jobs()
            with pytest.raises(Unavailable):
                await b.virtual_clusters()
            await asyncio.sleep(0.5)

        kube_cluster.start_apiserver()
        stopped = False
        # Changes made at once, likely before the backend's watches are back (their
        # backoff): it must catch up by listing again, not only by watching.
        back = time.monotonic()
        direct = _create_directly(kube_cluster, b, f"direct-{tag}")
        _delete_directly(kube_cluster, b, doomed)
        # Catching up is timed from the changes (a vcjob waits for the CRDs to be served).
        changed = time.monotonic()
        print(f"changes made {changed - back:.2f}s after the API server was ready")
        listed: set[str] = set()
        while True:
            try:
                listed = {j.id for j in await b.list_jobs()}
            except Unavailable:
                listed = set()
            if listed == {kept, direct}:
                break
            assert time.monotonic() - changed < CATCH_UP_SECONDS, f"listed {listed}"
            await asyncio.sleep(0.1)
        print(f"current {time.monotonic() - changed:.2f}s after the changes")
        with pytest.raises(NotFound):
            await b.get_job(doomed)
        assert (await b.get_job(kept)).state == JobState.RUNNING
        # The directly created job is followed by the watches like any other.
        # A job is RUNNING once one task runs; a gang's binds land one by one, so wait for
        # every task's node (once, 30 s after a SIGKILL, one bind came after RUNNING).
        running = await wait_for(
            b,
            direct,
            lambda d: d.state == JobState.RUNNING and all(t.node for t in d.tasks),
            CLUSTER_RECOVERY_SECONDS,
        )
        prompted = [e for e in await b.events(direct) if "command SyncJob" in e.message]
        print(
            f"the job made meanwhile ran {time.monotonic() - changed:.1f}s after the changes"
            + (" (its controller had missed an event: prompted)" if prompted else "")
        )
        assert all((t.node or "").startswith("gpu-") for t in running.tasks)
        # And the watches are live again: a change now shows up without a relist.
        lists = {name: r.lists for name, r in b.cache.reflectors.items()}
        await b.stop_job(kept)
        await wait_for(b, kept, lambda d: d.state == JobState.STOPPED, CLUSTER_RECOVERY_SECONDS)
        assert {name: r.lists for name, r in b.cache.reflectors.items()} == lists
    finally:
        if stopped:
            kube_cluster.start_apiserver()
        await b.close()
        _cleanup(kube_cluster, NS)


# etcd's restarts disturb kube-apiserver alike whatever the scheduler: one flavour.
ETCD_FLAVOR = "volcano"


@pytest.mark.parametrize("kill", [False, True], ids=["sigterm", "sigkill"])
async def test_etcd_restart_loses_nothing_and_refuses_submission_meanwhile(
    etcd_cluster: TestCluster, kill: bool
) -> None:
    _cleanup(etcd_cluster, NS)
    await _wait_settled(etcd_cluster)
    b = make_backend(etcd_cluster, ETCD_FLAVOR, node_selector=GPU_POOL)
    await b.start()
    stopped = False
    try:
        tag = "ek" if kill else "et"
        kept = (await b.submit(_job(f"kept-{tag}"))).id
        await _wait_running(etcd_cluster, b, ETCD_FLAVOR, kept)

        etcd_cluster.stop_etcd(kill=kill)
        stopped = True
        # A submission while etcd is down: a clear 503 within a bound, nothing made.
        start = time.monotonic()
        with pytest.raises(Unavailable) as refused:
            await b.submit(_job(f"meanwhile-{tag}"))
        took = time.monotonic() - start
        print(f"\nsubmission during the outage: {took:.1f}s: {refused.value.message}")
        assert refused.value.status == 503
        assert took < SUBMIT_DURING_OUTAGE_SECONDS

        etcd_cluster.start_etcd()
        stopped = False
        back = time.monotonic()
        direct = _create_directly(etcd_cluster, b, f"direct-{tag}")
        changed = time.monotonic()
        print(f"changes made {changed - back:.2f}s after etcd was healthy")
        listed: set[str] = set()
        while listed != {kept, direct}:
            try:
                listed = {j.id for j in await b.list_jobs()}
            except Unavailable:
                listed = set()
            assert time.monotonic() - changed < ETCD_CATCH_UP_SECONDS, f"listed {listed}"
            await asyncio.sleep(0.1)
        print(f"current {time.monotonic() - changed:.2f}s after the changes")
        # Nothing lost: the job that ran goes on, and the refused one runs when sent again.
        assert (await b.get_job(kept)).state == JobState.RUNNING
        again = (await b.submit(_job(f"meanwhile-{tag}"))).id
        await wait_for(b, again, lambda d: d.state == JobState.RUNNING, CLUSTER_RECOVERY_SECONDS)
    finally:
        if stopped:
            etcd_cluster.start_etcd()
        await b.close()
        _cleanup(etcd_cluster, NS)


# The scheduler's own processes, killed and started again mid-job.
CONTROLLERS = {
    "volcano": ("vc-controller-manager", "vc-scheduler"),
    "kueue": ("kueue-manager", "jobset-manager"),
}


def _pod_uids(cluster: TestCluster, backend: KubernetesBackend, job_id: str) -> set[str]:
    base = backend.views.primary(job_id)["metadata"]["labels"][LABEL_JOB]
    pods = cluster.core().list_namespaced_pod(NS, label_selector=f"{LABEL_JOB}={base}").items
    return {str(p.metadata.uid) for p in pods}


@pytest.mark.parametrize("flavor", list(CONTROLLERS))
async def test_the_schedulers_controllers_restart_and_jobs_go_on(
    kube_cluster: TestCluster, flavor: str
) -> None:
    """SIGKILL the flavour's controllers mid-job: the running job's pods stay (the same
    pods); a job submitted meanwhile waits saying why (Volcano) or is refused while the
    JobSet webhook is away (Kueue), and runs once they are back."""
    _cleanup(kube_cluster, NS)
    await _wait_settled(kube_cluster)
    b = make_backend(kube_cluster, flavor, node_selector=GPU_POOL)
    await b.start()
    plane = controlplane.ControlPlane(Path(kube_cluster.state.directory))
    down: list[str] = []
    try:
        running = (await b.submit(_job(f"steady-{flavor[0]}"))).id
        await _wait_running(kube_cluster, b, flavor, running)
        pods = _pod_uids(kube_cluster, b, running)
        assert len(pods) == 2, pods

        for name in CONTROLLERS[flavor]:
            plane.stop_process(name, kill=True)
            down.append(name)
        name = f"meanwhile-{flavor[0]}"
        if flavor == "kueue":
            # JobSet's manager serves the webhook every JobSet passes: without it the API
            # server refuses the job, a 503 saying so, with nothing left behind.
            with pytest.raises(Unavailable) as refused:
                await b.submit(_job(name))
            print(f"\nwhile {', '.join(down)} are down: {refused.value.message}")
            assert 'failed calling webhook "mjobset.kb.io"' in refused.value.message
            assert [j.name for j in await b.list_jobs()] == [f"steady-{flavor[0]}"]
        else:
            meanwhile = (await b.submit(_job(name))).id
            await asyncio.sleep(3)
            waiting = await b.get_job(meanwhile)
            print(f"\nwhile {', '.join(down)} are down: {waiting.state}: {waiting.waiting_reason}")
            assert waiting.state == JobState.WAITING and waiting.waiting_reason
        assert (await b.get_job(running)).state == JobState.RUNNING

        for name_ in CONTROLLERS[flavor]:
            plane.start_process(name_)
            down.remove(name_)
        back = time.monotonic()
        if flavor == "kueue":
            meanwhile = (await b.submit(_job(name))).id
        await wait_for(b, meanwhile, lambda d: d.state == JobState.RUNNING, 60)
        print(
            f"the job submitted meanwhile ran {time.monotonic() - back:.1f}s after they were back"
        )
        # The running job went on: the same pods, never restarted.
        assert (await b.get_job(running)).state == JobState.RUNNING
        assert _pod_uids(kube_cluster, b, running) == pods
    finally:
        for name in down:
            plane.start_process(name)
        await b.close()
        _cleanup(kube_cluster, NS)
