"""Storage browsed through the helper pod (no local mapping): a claim bound to a hostPath
PV whose folder is on this machine; the pod runner gives the helper pod's process that
folder at its mountPath (tests/cluster/README.md, volumes)."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from jupyter_server.utils import url_path_join
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from tornado.httpclient import HTTPClientError

from jupyter_pai.backends.kubernetes import KubernetesBackend
from jupyter_pai.backends.kubernetes.storage import HELPER_LABEL
from jupyter_pai.backends.models import StorageListing
from jupyter_pai.errors import BadRequest, Forbidden, NotFound
from tests.cluster import manifests, podenv, runner
from tests.cluster.pytest_plugin import TestCluster
from tests.kube.rest_server import *  # noqa: F403

pytestmark = pytest.mark.kube
NS = "alice"
RUNNER = {manifests.RUNNER_LABEL: "true"}
HELPERS = f"{HELPER_LABEL}=true"


def core_api(cluster: TestCluster) -> Any:
    # Any: the client's models are Optional everywhere; these tests read known fields.
    return client.CoreV1Api(cluster.api())


@dataclass
class Volume:
    claim: str
    pv: str
    root: Path
    outside: Path


def _make_tree(root: Path, outside: Path) -> None:
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "a.txt").write_text("alpha\n")
    (root / "top.bin").write_bytes(bytes(range(256)) * 4)
    outside.write_text("secret\n")
    (root / "escape").symlink_to(outside)
    (root / "inside").symlink_to("sub")  # relative: absolute host paths mean nothing in a pod


def make_volume(
    cluster: TestCluster, tmp: Path, read_only_many: bool = False, root: Path | None = None
) -> Volume:
    """A hostPath PV pre-bound to a claim in alice's namespace (created as admin: PVs are
    cluster-wide): of the folder ``root``, else of a small tree made in ``tmp``."""
    core = core_api(cluster)
    suffix = uuid.uuid4().hex[:6]
    outside = tmp / "outside.txt"
    if root is None:
        root = tmp / "pv"
        _make_tree(root, outside)
    pv, claim = f"pv-{suffix}", f"data-{suffix}"
    mode = "ReadOnlyMany" if read_only_many else "ReadWriteOnce"
    core.create_persistent_volume(
        {
            "metadata": {"name": pv},
            "spec": {
                "capacity": {"storage": "1Gi"},
                "accessModes": [mode],
                "storageClassName": "",
                "persistentVolumeReclaimPolicy": "Retain",
                "hostPath": {"path": str(root), "type": "Directory"},
                "claimRef": {"namespace": NS, "name": claim},
            },
        }
    )
    core.create_namespaced_persistent_volume_claim(
        NS,
        {
            "metadata": {"name": claim},
            "spec": {
                "accessModes": [mode],
                "storageClassName": "",
                "volumeName": pv,
                "resources": {"requests": {"storage": "1Gi"}},
            },
        },
    )
    deadline = time.monotonic() + 30
    while core.read_namespaced_persistent_volume_claim(claim, NS).status.phase != "Bound":
        assert time.monotonic() < deadline, "the claim is never bound to its PV"
        time.sleep(0.2)
    return Volume(claim, pv, root, outside)


def drop_volume(cluster: TestCluster, volume: Volume) -> None:
    core = core_api(cluster)
    for delete, args in (
        (core.delete_namespaced_persistent_volume_claim, (volume.claim, NS)),
        (core.delete_persistent_volume, (volume.pv,)),
    ):
        try:
            delete(*args)
        except ApiException as error:
            if error.status != 404:
                raise


def helper_pods(cluster: TestCluster) -> list[str]:
    core = core_api(cluster)
    return [p.metadata.name for p in core.list_namespaced_pod(NS, label_selector=HELPERS).items]


@pytest.fixture
def volume(kube_cluster: TestCluster, tmp_path: Path) -> Iterator[Volume]:
    made = make_volume(kube_cluster, tmp_path)
    yield made
    drop_volume(kube_cluster, made)


async def started(cluster: TestCluster, claim: str, **kwargs: Any) -> KubernetesBackend:
    kwargs.setdefault("node_selector", RUNNER)
    b = KubernetesBackend(
        kubeconfig=str(cluster.user_kubeconfigs["alice"]), flavor="native", user="alice", **kwargs
    )
    await b.start()
    deadline = time.monotonic() + 20
    while not any(st.name == claim for st in await b.storages()):
        assert time.monotonic() < deadline, "the claim never appears as a storage"
        await asyncio.sleep(0.2)
    return b


async def read_all(chunks: AsyncIterator[bytes]) -> bytes:
    return b"".join([c async for c in chunks])


# -- the runner: a claim's folder at the container's mountPath -----------------------------


def test_mount_paths_in_arguments_point_at_the_local_view() -> None:
    mounts = {"/storage": "/w/volumes/main/s", "/storage/deep": "/w/volumes/main/d"}
    argv = ["ls", "/storage", "/storage/x", "/storage/deep/y", "/storagex", "-C/storage"]
    assert podenv.rewrite_mounts(argv, mounts) == [
        "ls",
        "/w/volumes/main/s",
        "/w/volumes/main/s/x",
        "/w/volumes/main/d/y",
        "/storagex",
        "-C/storage",
    ]


def run_claim_pod(
    cluster: TestCluster, volume: Volume, command: list[str], mount: dict[str, Any]
) -> str:
    """Run a pod on the runner with ``volume``'s claim mounted as ``mount`` (a volumeMount
    without its name); its log once it succeeded."""
    core = core_api(cluster)
    name = f"claim-{uuid.uuid4().hex[:6]}"
    core.create_namespaced_pod(
        NS,
        {
            "metadata": {"name": name},
            "spec": {
                "restartPolicy": "Never",
                "terminationGracePeriodSeconds": 0,
                "nodeSelector": RUNNER,
                "containers": [
                    {
                        "name": "main",
                        "image": "python:3",
                        "command": command,
                        "volumeMounts": [{"name": "d", **mount}],
                    }
                ],
                "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": volume.claim}}],
            },
        },
    )
    try:
        deadline = time.monotonic() + 30
        while core.read_namespaced_pod(name, NS).status.phase not in ("Succeeded", "Failed"):
            assert time.monotonic() < deadline, "the pod never finishes"
            time.sleep(0.2)
        text: str = core.read_namespaced_pod_log(name, NS)
        assert core.read_namespaced_pod(name, NS).status.phase == "Succeeded", text
        return text
    finally:
        core.delete_namespaced_pod(name, NS, grace_period_seconds=0)


def test_a_runner_pod_sees_its_claim_and_a_read_only_mount_refuses_writes(
    kube_cluster: TestCluster, volume: Volume
) -> None:
    script = (
        "import json, os, sys\n"
        "root = sys.argv[1]\n"
        "try:\n"
        "    open(os.path.join(root, 'new.txt'), 'w').write('x')\n"
        "    wrote = True\n"
        "except OSError:\n"
        "    wrote = False\n"
        "print(json.dumps({'ls': sorted(os.listdir(root)), 'wrote': wrote,"
        " 'a': open(root + '/sub/a.txt').read(), 'env': os.environ['JUPYTER_PAI_TEST_MOUNTS'],"
        " 'at_mount_path': sorted(os.listdir('/data')) if os.path.isdir('/data') else None}))\n"
    )
    text = run_claim_pod(
        kube_cluster,
        volume,
        ["python", "-c", script, "/data"],
        {"mountPath": "/data", "readOnly": True},
    )
    doc = json.loads(text.strip().splitlines()[-1])
    assert doc["ls"] == ["escape", "inside", "sub", "top.bin"]
    assert doc["a"] == "alpha\n"
    assert list(json.loads(doc["env"])) == ["/data"]
    # readOnly is enforced where the runner can bind-mount (root with unshare, as
    # here and in CI); elsewhere the view is a plain symlink (README: volumes).
    assert doc["wrote"] is not runner.BIND_READ_ONLY
    assert (volume.root / "new.txt").exists() is not runner.BIND_READ_ONLY
    if runner.BIND_READ_ONLY:  # a path the runner cannot rewrite (inside the script)
        assert doc["at_mount_path"] == ["escape", "inside", "sub", "top.bin"]


def test_a_runner_pod_writes_its_claim_at_the_mount_path_inside_a_shell_command(
    kube_cluster: TestCluster, volume: Volume
) -> None:
    """A path inside a command string (`bash -c "cd /results && …"`), which no argument
    rewriting reaches: the runner binds the claim at its mountPath in the pod's own mount
    namespace (root with unshare, as here and in CI), as a container sees it."""
    assert runner.BIND_READ_ONLY, "the pod runner needs root and unshare for mounts"
    mount_path = f"/mnt/jupyter-pai-test-{uuid.uuid4().hex[:6]}"
    try:
        command = f"cd {mount_path}/sub && cat a.txt && echo written > out.txt"
        text = run_claim_pod(
            kube_cluster, volume, ["bash", "-c", command], {"mountPath": mount_path}
        )
        assert text == "alpha\n"
        assert (volume.root / "sub" / "out.txt").read_text() == "written\n"
        assert not any(Path(mount_path).iterdir())  # the host sees no mount there
    finally:
        if Path(mount_path).is_dir():  # made by the runner
            Path(mount_path).rmdir()


def test_a_pod_whose_claim_is_unbound_waits_with_a_config_error(
    kube_cluster: TestCluster,
) -> None:
    core = core_api(kube_cluster)
    name = f"nomount-{uuid.uuid4().hex[:6]}"
    core.create_namespaced_pod(
        NS,
        {
            "metadata": {"name": name},
            "spec": {
                "nodeName": "runner-0",  # no scheduler wait for the claim: the runner's check
                "terminationGracePeriodSeconds": 0,
                "containers": [
                    {
                        "name": "main",
                        "image": "python:3",
                        "command": ["python", "-c", "print(1)"],
                        "volumeMounts": [{"name": "d", "mountPath": "/data"}],
                    }
                ],
                "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "no-such"}}],
            },
        },
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            statuses = core.read_namespaced_pod(name, NS).status.container_statuses or []
            waiting = statuses[0].state.waiting if statuses else None
            if waiting is not None and waiting.reason == "CreateContainerConfigError":
                assert "no-such" in (waiting.message or "")
                break
            assert time.monotonic() < deadline, "no config error reported"
            time.sleep(0.2)
        assert core.read_namespaced_pod(name, NS).status.phase == "Pending"
    finally:
        core.delete_namespaced_pod(name, NS, grace_period_seconds=0)


# -- the backend's helper pod --------------------------------------------------------------


async def test_helper_pod_lists_reads_and_refuses_traversal(
    kube_cluster: TestCluster, volume: Volume
) -> None:
    b = await started(kube_cluster, volume.claim)
    try:
        listing = await b.read_storage(volume.claim, "")
        assert isinstance(listing, StorageListing)
        # The link out of the storage is not listed (as storage_fs); the one inside is.
        assert [(e.name, e.type) for e in listing.entries] == [
            ("inside", "directory"),
            ("sub", "directory"),
            ("top.bin", "file"),
        ]
        assert next(e for e in listing.entries if e.name == "top.bin").size == 1024
        sub = await b.read_storage(volume.claim, "sub/")
        assert isinstance(sub, StorageListing)
        assert sub.path == "sub"
        assert [(e.name, e.path, e.size) for e in sub.entries] == [("a.txt", "sub/a.txt", 6)]
        content = await b.read_storage(volume.claim, "sub/a.txt")
        assert not isinstance(content, StorageListing)
        assert await read_all(content.chunks) == b"alpha\n"
        binary = await b.read_storage(volume.claim, "top.bin")
        assert not isinstance(binary, StorageListing)
        assert await read_all(binary.chunks) == bytes(range(256)) * 4
        for bad in ("../outside.txt", "sub/../../x", "..", "/etc/passwd", "/"):
            with pytest.raises(BadRequest):
                await b.read_storage(volume.claim, bad)
        with pytest.raises(Forbidden):
            await b.read_storage(volume.claim, "escape")
        with pytest.raises(NotFound):
            await b.read_storage(volume.claim, "sub/none.txt")
        with pytest.raises(NotFound):
            await b.read_storage("not-a-claim", "")
        # Requests in a row are answered by one helper pod, not one pod each.
        assert len(helper_pods(kube_cluster)) == 1
    finally:
        await b.close()
    assert helper_pods(kube_cluster) == [], "a helper pod outlived the backend"


async def test_helper_pod_serves_hidden_files_only_when_allowed(
    kube_cluster: TestCluster, volume: Volume
) -> None:
    """Hidden names follow ``storage_allow_hidden`` (the server's
    ``ContentsManager.allow_hidden``), which the pod learns from each request."""
    (volume.root / ".hidden.txt").write_text("hidden\n")
    (volume.root / "sub" / ".git").mkdir()
    (volume.root / "sub" / ".git" / "config").write_text("config\n")
    b = await started(kube_cluster, volume.claim)
    try:
        listing = await b.read_storage(volume.claim, "")
        assert isinstance(listing, StorageListing)
        assert [e.name for e in listing.entries] == ["inside", "sub", "top.bin"]
        for path in (".hidden.txt", "sub/.git/config", "inside/.git", ".nothing"):
            with pytest.raises(Forbidden) as refused:
                await b.read_storage(volume.claim, path)
            assert "hidden" in refused.value.message, path
        archive = await b.archive_storage(volume.claim, "sub", "zip")
        assert b"config" not in await read_all(archive.chunks)

        b.storage_allow_hidden = True
        listing = await b.read_storage(volume.claim, "")
        assert isinstance(listing, StorageListing)
        assert [e.name for e in listing.entries] == [".hidden.txt", "inside", "sub", "top.bin"]
        content = await b.read_storage(volume.claim, "sub/.git/config")
        assert not isinstance(content, StorageListing)
        assert await read_all(content.chunks) == b"config\n"
        assert len(helper_pods(kube_cluster)) == 1  # the same pod, told per request
    finally:
        await b.close()


async def test_idle_helper_pod_goes_away(kube_cluster: TestCluster, volume: Volume) -> None:
    b = await started(kube_cluster, volume.claim, storage_helper_idle=1.0)
    try:
        assert isinstance(await b.read_storage(volume.claim, "sub"), StorageListing)
        deadline = time.monotonic() + 20
        while helper_pods(kube_cluster):
            assert time.monotonic() < deadline, "the idle helper pod stays"
            await asyncio.sleep(0.2)
        # and a new request starts a new one
        listing = await b.read_storage(volume.claim, "")
        assert isinstance(listing, StorageListing)
        assert "sub" in [e.name for e in listing.entries]
    finally:
        await b.close()
    assert helper_pods(kube_cluster) == []


# -- through the REST API -------------------------------------------------------------------


async def fetch_status(fetch: Any, *path: str) -> tuple[int, Any]:
    try:
        resp = await fetch("pai", "api", *path, method="GET")
    except HTTPClientError as error:
        assert error.response is not None
        return error.code, json.loads(error.response.body.decode())
    body = resp.body.decode()
    return resp.code, json.loads(body) if "json" in resp.headers.get("Content-Type", "") else body


async def test_rest_lists_through_the_helper_and_refuses_traversal(
    jp_fetch: Any,
    http_server_client: Any,
    jp_base_url: str,
    jp_auth_header: dict[str, str],
    kube_cluster: TestCluster,
    volume: Volume,
) -> None:
    deadline = time.monotonic() + 20
    while True:
        code, doc = await fetch_status(jp_fetch, "storage")
        if code == 200 and volume.claim in [s["name"] for s in doc["items"]]:
            break
        assert time.monotonic() < deadline, f"no storage {volume.claim}: {code} {doc}"
        await asyncio.sleep(0.3)
    code, doc = await fetch_status(jp_fetch, "storage", volume.claim, "sub")
    assert code == 200, doc
    assert [e["name"] for e in doc["entries"]] == ["a.txt"]
    code, text = await fetch_status(jp_fetch, "storage", volume.claim, "sub", "a.txt")
    assert (code, text) == (200, "alpha\n")
    # Sent as written (jp_fetch would escape the %): the server decodes the dots.
    for raw in ("sub/%2e%2e/%2E%2E/outside.txt", "..%2Foutside.txt", "%2Fetc%2Fpasswd"):
        url = url_path_join(jp_base_url, "pai/api/storage", volume.claim, raw)
        resp = await http_server_client.fetch(url, headers=jp_auth_header, raise_error=False)
        assert resp.code == 400, (raw, resp.code, resp.body)
        assert json.loads(resp.body)["errors"][0]["path"] == "path"
    code, doc = await fetch_status(jp_fetch, "storage", volume.claim, "escape")
    assert code == 403, doc
    code, doc = await fetch_status(jp_fetch, "storage", "not-a-claim")
    assert code == 404, doc


def test_no_helper_pod_left_behind(kube_cluster: TestCluster) -> None:
    # Runs after the REST test: the server's shutdown closed the backend.
    deadline = time.monotonic() + 10
    while helper_pods(kube_cluster):
        assert time.monotonic() < deadline, f"helper pods left: {helper_pods(kube_cluster)}"
        time.sleep(0.2)
