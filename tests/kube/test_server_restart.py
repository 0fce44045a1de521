"""Nothing left behind: a Jupyter server on the Kubernetes backend killed with SIGKILL
mid-job comes back with the job listed, following it to its end with its log readable,
and its next start deletes the storage helper pod the killed one left — only that one:
not another user's, not a helper of a process that still runs.

The jobs live in the cluster and need no server; what a killed server can leave is its
helper pods and, killed while it submitted, a job's Secret or Service with no owner
(README: nothing left behind). Its port-forwards were sockets of its own process, closed
by the kernel when it died: nothing of them remains to test."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
import yaml
from kubernetes.client.exceptions import ApiException

from jupyter_pai.backends.kubernetes.naming import (
    ANN_USER,
    LABEL_JOB,
    LABEL_MANAGED_BY,
    LABEL_USER,
    MANAGED_BY,
    make_names,
)
from jupyter_pai.backends.kubernetes.owner import ANN_OWNER, ProcessOwner
from jupyter_pai.backends.kubernetes.storage import HELPER_LABEL, HelperPods
from jupyter_pai.backends.models import StorageListing
from jupyter_pai.spec import parse_job
from tests.cluster import manifests
from tests.cluster.kwokconfig import RUN_FOR
from tests.cluster.pytest_plugin import TestCluster
from tests.kube.test_backend_jobs import GPU_POOL, NS, SLEEPER, _cleanup, make_backend
from tests.kube.test_backend_storage import (
    core_api,
    drop_volume,
    helper_pods,
    make_volume,
    started,
)
from tests.kube.test_kernels import backend_config
from tests.server.pai import job_spec
from tests.server.test_restart import ServerProcess, wait_until

pytestmark = pytest.mark.kube
NOWHERE = {manifests.POOL_LABEL: "nowhere"}  # no node has it: the pod stays Pending


def ended_owner() -> ProcessOwner:
    """The owner annotation of a process of this machine that has ended."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    owner = ProcessOwner(ProcessOwner.this().host, proc.pid, psutil.Process(proc.pid).create_time())
    proc.kill()
    proc.wait()
    return owner


def helper_like_pod(
    cluster: TestCluster,
    user: str,
    owner: ProcessOwner | None,
    *,
    node_selector: dict[str, str] = NOWHERE,
    annotations: dict[str, str] | None = None,
) -> str:
    """A pod labelled as ``user``'s storage helper, made by ``owner`` (none: no annotation)."""
    name = f"helper-like-{user}-{uuid.uuid4().hex[:6]}"
    ann = {ANN_USER: user, **(annotations or {})}
    if owner is not None:
        ann[ANN_OWNER] = owner.encode()
    core_api(cluster).create_namespaced_pod(
        NS,
        {
            "metadata": {
                "name": name,
                "labels": {HELPER_LABEL: "true", LABEL_USER: user},
                "annotations": ann,
            },
            "spec": {
                "restartPolicy": "Never",
                "terminationGracePeriodSeconds": 0,
                "nodeSelector": node_selector,
                "containers": [{"name": "main", "image": "python:3", "command": ["true"]}],
            },
        },
    )
    return name


def drop_pods(cluster: TestCluster, names: list[str]) -> None:
    for name in names:
        try:
            core_api(cluster).delete_namespaced_pod(name, NS, grace_period_seconds=0)
        except ApiException as error:
            if error.status != 404:
                raise


async def until_gone(cluster: TestCluster, names: set[str], timeout: float) -> None:
    async def gone() -> bool:
        return not names & set(helper_pods(cluster))

    await wait_until(gone, f"helper pods {sorted(names)} to go", timeout)


@pytest.fixture
def child() -> Iterator[subprocess.Popen[bytes]]:
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    yield proc
    proc.kill()
    proc.wait()


async def test_start_deletes_only_helper_pods_left_by_ended_processes_of_its_user(
    kube_cluster: TestCluster, child: subprocess.Popen[bytes]
) -> None:
    running = ProcessOwner(
        ProcessOwner.this().host, child.pid, psutil.Process(child.pid).create_time()
    )
    dead = ended_owner()
    made: list[str] = []
    try:
        left = helper_like_pod(kube_cluster, "alice", dead)
        made.append(left)
        # an ended helper goes whoever made it (it serves nobody)
        ended = helper_like_pod(
            kube_cluster,
            "alice",
            running,
            node_selector={manifests.POOL_LABEL: "gpu"},
            annotations={RUN_FOR: "0s"},
        )
        made.append(ended)
        kept = {
            "a running process's": helper_like_pod(kube_cluster, "alice", running),
            "another user's": helper_like_pod(kube_cluster, "bob", dead),
            "one without an owner": helper_like_pod(kube_cluster, "alice", None),
        }
        made += kept.values()
        core = core_api(kube_cluster)
        deadline = time.monotonic() + 30
        while core.read_namespaced_pod(ended, NS).status.phase != "Succeeded":
            assert time.monotonic() < deadline, "the simulated helper never ends"
            await asyncio.sleep(0.2)

        b = make_backend(kube_cluster, "native")
        await b.start()
        try:
            await until_gone(kube_cluster, {left, ended}, timeout=10)
            remaining = set(helper_pods(kube_cluster))
            assert {what: name in remaining for what, name in kept.items()} == dict.fromkeys(
                kept, True
            )
        finally:
            await b.close()
        remaining = set(helper_pods(kube_cluster))
        assert all(name in remaining for name in kept.values()), "close deleted others' pods"
    finally:
        drop_pods(kube_cluster, made)


async def test_a_helper_pod_whose_owner_never_returns_ends_by_itself(
    kube_cluster: TestCluster, tmp_path: Path
) -> None:
    """An owner that cannot be checked (another machine) and never comes back: the pod's
    server exits after ``exit_after`` seconds without a request, so the pod holds nothing,
    and the user's next start deletes the ended pod."""
    volume = make_volume(kube_cluster, tmp_path)
    try:
        b = await started(kube_cluster, volume.claim)
        try:
            elsewhere = ProcessOwner("another-machine", 1, 0.0)
            helpers = HelperPods(
                b._rest(),
                NS,
                "alice",
                "python:3",
                b.options,
                idle=600,
                exit_after=2,
                owner=elsewhere,
            )
            assert isinstance(await helpers.read(volume.claim, "sub"), StorageListing)
            [pod] = helper_pods(kube_cluster)
            for helper in helpers.helpers.values():  # as if its process were killed
                assert helper.reaper is not None
                helper.reaper.cancel()
            helpers.helpers.clear()
            await helpers.close()
            core = core_api(kube_cluster)
            deadline = time.monotonic() + 30
            while core.read_namespaced_pod(pod, NS).status.phase != "Succeeded":
                assert time.monotonic() < deadline, "the orphaned helper pod keeps running"
                await asyncio.sleep(0.3)
            assert "no request for 2 s: exiting" in core.read_namespaced_pod_log(pod, NS)
        finally:
            await b.close()
        assert pod in helper_pods(kube_cluster), "nothing but the next start deletes it"
        again = make_backend(kube_cluster, "native")
        await again.start()
        try:
            await until_gone(kube_cluster, {pod}, timeout=10)
        finally:
            await again.close()
    finally:
        drop_pods(kube_cluster, helper_pods(kube_cluster))
        drop_volume(kube_cluster, volume)


def ownerless_secret(cluster: TestCluster, name: str, user: str, job_base: str) -> None:
    """A job's Secret as a creation cut short leaves it: labelled, with no owner."""
    labels = {LABEL_MANAGED_BY: MANAGED_BY, LABEL_USER: user, LABEL_JOB: job_base}
    body = {"metadata": {"name": name, "labels": labels}, "stringData": {"k": "v"}}
    core_api(cluster).create_namespaced_secret(NS, body)


async def test_start_finishes_job_creations_a_killed_process_left(
    kube_cluster: TestCluster,
) -> None:
    """Volcano, whose primary comes after its Secret and Service (Kueue's too); the sweep
    itself is the same for every flavor. An ownerless Secret of a job that exists gets it
    as owner, one of a job never made is deleted; bob's and a young one are not touched."""
    _cleanup(kube_cluster, NS)
    core = core_api(kube_cluster)
    first = make_backend(kube_cluster, "volcano", node_selector=GPU_POOL)
    await first.start()
    made: list[str] = []
    try:
        spec = parse_job(SLEEPER.format(name="kept", vc="default", n=1, gpu=0)).job
        job = await first.submit(spec)
        await first.close()
        base = make_names(spec, "alice").base
        primary = next(p for p in first.cache["primary"].values() if p["metadata"]["name"] == base)
        adopted, dropped = f"{base}-cut-short", "alice-never-made-00000-secrets"
        bobs = "bob-never-made-00000-secrets"
        ownerless_secret(kube_cluster, adopted, "alice", base)
        ownerless_secret(kube_cluster, dropped, "alice", "alice-never-made-00000")
        ownerless_secret(kube_cluster, bobs, "bob", "bob-never-made-00000")
        made += [adopted, dropped, bobs]
        await asyncio.sleep(5)  # creationTimestamp counts whole seconds
        young = "alice-in-progress-00000-secrets"
        ownerless_secret(kube_cluster, young, "alice", "alice-in-progress-00000")
        made.append(young)

        second = make_backend(
            kube_cluster, "volcano", node_selector=GPU_POOL, leftover_grace_seconds=4.0
        )
        await second.start()
        try:

            async def finished() -> bool:
                names = {s.metadata.name for s in core.list_namespaced_secret(NS).items}
                return dropped not in names

            await wait_until(finished, "the ownerless Secret of no job to go", timeout=20)
            owners = core.read_namespaced_secret(adopted, NS).metadata.owner_references or []
            assert [(o.kind, o.name, o.uid) for o in owners] == [
                ("Job", base, primary["metadata"]["uid"])
            ]
            for untouched in (bobs, young):
                assert core.read_namespaced_secret(untouched, NS).metadata.owner_references is None
            assert (await second.get_job(job.id)).name == "kept"
        finally:
            await second.close()
    finally:
        for name in made:
            try:
                core.delete_namespaced_secret(name, NS)
            except ApiException as error:
                if error.status != 404:
                    raise
        _cleanup(kube_cluster, NS)


TICKS = (
    'for i in $(seq 1 600); do echo "tick $i"; '
    "if [ -e {release} ]; then break; fi; sleep 0.2; done; echo finished"
)


def server_env(cluster: TestCluster, flavor: str, tmp_path: Path) -> dict[str, str]:
    """The Kubernetes backend as alice, her pods on the runner node (as the REST tests')."""
    config_dir = tmp_path / "jupyter-config"
    config_dir.mkdir()
    config = backend_config(cluster, flavor)
    (config_dir / "jupyter_server_config.json").write_text(json.dumps(config))
    return {
        **{k: v for k, v in os.environ.items() if not k.startswith("JUPYTER_PAI")},
        "HOME": str(tmp_path),
        "JUPYTER_CONFIG_DIR": str(config_dir),
        "JUPYTER_RUNTIME_DIR": str(tmp_path / "jupyter-runtime"),
    }


@pytest.fixture
def servers() -> Iterator[list[ServerProcess]]:
    started: list[ServerProcess] = []
    yield started
    for server in started:
        server.kill()


async def test_a_killed_server_comes_back_with_its_job_and_leaves_no_helper_pod(
    kube_cluster: TestCluster, flavor: str, servers: list[ServerProcess], tmp_path: Path
) -> None:
    """Per flavor (about 10 s each): the new server rebuilds each flavor's job view
    from the cluster alone; the helper pods are the same on every flavor."""
    root = tmp_path / "server-root"
    root.mkdir()
    env = server_env(kube_cluster, flavor, tmp_path)
    volume = make_volume(kube_cluster, tmp_path)
    release = tmp_path / "release"
    others: list[str] = []
    _cleanup(kube_cluster, NS)
    try:
        first = ServerProcess(root, tmp_path / "server-1.log", env)
        servers.append(first)
        await first.ready()
        spec = job_spec("survivor", {"worker": {"commands": [TICKS.format(release=release)]}})
        r = await first.request(
            "POST", "jobs", yaml.safe_dump(spec), **{"Content-Type": "text/yaml"}
        )
        assert r.code == 201, r.body
        job_id = json.loads(r.body)["job"]["id"]
        log_path = f"jobs/{job_id}/logs?role=worker&index=0"

        async def ticking() -> bool:
            r = await first.request("GET", log_path)
            return r.code == 200 and "tick 3\n" in r.body.decode()

        await wait_until(ticking, "three ticks through the first server", timeout=90)

        async def listed() -> bool:
            doc = await first.get("storage")
            return volume.claim in [s["name"] for s in doc["items"]]

        await wait_until(listed, "the claim listed as a storage", timeout=20)
        listing = await first.get(f"storage/{volume.claim}/sub")
        assert [e["name"] for e in listing["entries"]] == ["a.txt"]
        [helper] = helper_pods(kube_cluster)
        made_by = core_api(kube_cluster).read_namespaced_pod(helper, NS).metadata.annotations
        owner = ProcessOwner.decode(made_by[ANN_OWNER])
        assert owner is not None and owner.pid == first.proc.pid, made_by
        # bob's helper made by the very process that is killed: still not alice's to delete
        others.append(helper_like_pod(kube_cluster, "bob", owner))

        first.kill()
        assert helper in helper_pods(kube_cluster), "nothing but the next start deletes it"

        second = ServerProcess(root, tmp_path / "server-2.log", env)
        servers.append(second)
        await second.ready()  # its first request starts the backend
        await until_gone(kube_cluster, {helper}, timeout=10)
        assert others[0] in helper_pods(kube_cluster), "another user's helper was deleted"

        jobs = {j["id"]: j for j in (await second.get("jobs"))["items"]}
        assert jobs[job_id]["state"] == "RUNNING", jobs
        before = await second.get(log_path)
        assert before.startswith("tick 1\ntick 2\ntick 3\n"), before

        release.touch()

        async def ended() -> dict[str, Any] | None:
            job: dict[str, Any] = await second.get(f"jobs/{job_id}")
            return job if job["state"] in ("SUCCEEDED", "FAILED", "STOPPED") else None

        job = await wait_until(ended, "the job to end", timeout=90)
        assert job["state"] == "SUCCEEDED", job
        after = await second.get(log_path)
        lines = after.splitlines()
        assert after.startswith(before) and lines[-1] == "finished", after
        assert lines[:-1] == [f"tick {i}" for i in range(1, len(lines))]
        # and the storage is browsed again, through a new helper pod of the second server
        listing = await second.get(f"storage/{volume.claim}/sub")
        assert [e["name"] for e in listing["entries"]] == ["a.txt"]
        assert others[0] in helper_pods(kube_cluster)
    finally:
        for server in servers:
            server.kill()
        drop_pods(kube_cluster, others + helper_pods(kube_cluster))  # the second's, killed too
        _cleanup(kube_cluster, NS)
        drop_volume(kube_cluster, volume)
