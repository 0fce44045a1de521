"""Images on the test cluster, with a real registry (docker-registry with basic auth):
pods of a private registry's image pull with its Secret; the catalogue reads that
registry's credentials from the same Secret with the user's own rights; GPU nodes that
list an image in ``status.images`` are counted as holding it. The flavor does not matter
here (every flavor's pods come from one builder, checked per flavor by a unit test), so
this runs on ``native`` only."""

from __future__ import annotations

import asyncio
import base64
import json
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest
from kubernetes import client
from traitlets.config import Config

from jupyter_pai.backends.kubernetes import KubernetesBackend
from jupyter_pai.backends.kubernetes.naming import ANN_JOB_ID
from jupyter_pai.config import PAIConfig
from jupyter_pai.submission.images import image_choices, image_policy
from tests.cluster import kube
from tests.cluster.pytest_plugin import TestCluster
from tests.kube.test_backend_jobs import _cleanup, make_backend
from tests.registry import PushedImage, Registry, image_job, push_image, running_registry

pytestmark = pytest.mark.kube
NS = "alice"
SECRET = "team-registry"
NODE = "gpu-2"


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Registry]:
    with running_registry(tmp_path_factory.mktemp("registry"), auth="basic") as r:
        yield r


@pytest.fixture(scope="module")
def pushed(registry: Registry) -> PushedImage:
    return push_image(registry, "team/train", "1.0", labels={"com.nvidia.cuda.version": "12.4"})


@pytest.fixture
def pull_secret(kube_cluster: TestCluster, registry: Registry) -> Iterator[str]:
    """A ``kubernetes.io/dockerconfigjson`` Secret for the registry, as an admin makes it."""
    pair = f"{registry.username}:{registry.password}".encode()
    document = {"auths": {registry.host: {"auth": base64.b64encode(pair).decode()}}}
    core = kube.core(kube_cluster.api())
    body = client.V1Secret(
        metadata=client.V1ObjectMeta(name=SECRET),
        type="kubernetes.io/dockerconfigjson",
        string_data={".dockerconfigjson": json.dumps(document)},
    )
    core.create_namespaced_secret(NS, body)
    try:
        yield SECRET
    finally:
        core.delete_namespaced_secret(SECRET, NS)


@pytest.fixture
async def backend(
    kube_cluster: TestCluster, registry: Registry, pull_secret: str
) -> AsyncIterator[KubernetesBackend]:
    _cleanup(kube_cluster, NS)
    b = make_backend(kube_cluster, "native", image_pull_secrets={registry.host: pull_secret})
    await b.start()
    yield b
    await b.close()
    _cleanup(kube_cluster, NS)


@pytest.fixture
def image_on_a_gpu_node(kube_cluster: TestCluster, pushed: PushedImage) -> Iterator[None]:
    """``gpu-2`` says it holds the image, as a kubelet that pulled it would."""
    core = kube.core(kube_cluster.api())
    repository = pushed.uri.rsplit(":", 1)[0]
    images = [{"names": [pushed.uri, f"{repository}@{pushed.digest}"], "sizeBytes": pushed.size}]
    core.patch_node_status(NODE, {"status": {"images": images}})
    try:
        yield
    finally:
        core.patch_node_status(NODE, {"status": {"images": []}})


async def eventually(find: Callable[[], client.V1Pod | None], timeout: float) -> client.V1Pod:
    deadline = time.monotonic() + timeout
    while (found := find()) is None:
        assert time.monotonic() < deadline, "no pod in time"
        await asyncio.sleep(0.3)
    return found


async def test_a_private_registrys_pods_pull_with_its_secret(
    kube_cluster: TestCluster, backend: KubernetesBackend, pushed: PushedImage
) -> None:
    from jupyter_pai.spec import parse_job

    private = await backend.submit(parse_job(image_job(pushed.uri, "private")).job)
    public = await backend.submit(parse_job(image_job("python:3.11-slim", "public")).job)
    core = kube.core(kube_cluster.api())

    def pod_of(job_id: str) -> client.V1Pod | None:
        pods = core.list_namespaced_pod(NS).items
        mine = [p for p in pods if (p.metadata.annotations or {}).get(ANN_JOB_ID) == job_id]
        return mine[0] if mine else None

    private_pod = await eventually(lambda: pod_of(private.id), 60)
    public_pod = await eventually(lambda: pod_of(public.id), 60)
    assert [s.name for s in private_pod.spec.image_pull_secrets] == [SECRET]
    assert public_pod.spec.image_pull_secrets is None


async def test_the_catalogue_reads_the_registrys_credentials_from_the_secret(
    kube_cluster: TestCluster,
    backend: KubernetesBackend,
    registry: Registry,
    pushed: PushedImage,
    image_on_a_gpu_node: None,
) -> None:
    assert await backend.registry_credentials(SECRET, registry.host) == (
        registry.username,
        registry.password,
    )
    config = Config()
    config.PAIConfig.image_registries = [
        {"url": registry.url, "kind": "oci", "credentials": {"secret": SECRET}}
    ]

    async def started() -> KubernetesBackend:
        return backend

    policy = image_policy(PAIConfig(config=config), started)
    assert policy.catalogue is not None
    try:
        await policy.catalogue.refresh()
        choices = await image_choices(policy, backend)
    finally:
        await policy.catalogue.close()
    [status] = choices.registries
    assert status.ok, status.error
    [repository] = choices.repositories
    [tag] = repository.tags
    assert (tag.uri, tag.cuda) == (pushed.uri, "12.4")
    assert tag.nodes_with_image == 1  # gpu-2 holds it; the CPU-less count is of GPU nodes
    assert (await backend.images_on_gpu_nodes() or {})[pushed.uri] == 1


def test_the_test_registry_refuses_anonymous_reads(registry: Registry, tmp_path: Path) -> None:
    """The credentials above are needed: without them the registry answers 401."""
    import urllib.error
    import urllib.request

    with pytest.raises(urllib.error.HTTPError) as error:
        urllib.request.urlopen(f"{registry.url}/v2/_catalog", timeout=5)
    assert error.value.code == 401
