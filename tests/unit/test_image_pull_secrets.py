"""Private registries: every flavor's pods name the Secret of their image's registry in
``imagePullSecrets`` (and only that one); registry credentials are read from Docker's
config documents; GPU nodes' images are counted from ``node.status.images``."""

from __future__ import annotations

import base64

import pytest

from jupyter_pai.backends.kubernetes.flavors import FLAVORS, HivedSettings
from jupyter_pai.backends.kubernetes.naming import make_names
from jupyter_pai.backends.kubernetes.pods import PodOptions, registry_host
from jupyter_pai.backends.kubernetes.registries import gpu_node_images
from jupyter_pai.backends.registryauth import credentials_for
from jupyter_pai.config import PAIConfig
from jupyter_pai.spec import parse_job

OPTIONS = PodOptions(
    namespace="alice",
    image_pull_secrets={"harbor.example.com": "team-registry", "127.0.0.1:5000": "local"},
)


def job_with(image: str) -> str:
    return f"""
protocolVersion: 2
name: pull
type: job
prerequisites:
  - {{name: img, type: dockerimage, uri: "{image}"}}
taskRoles:
  worker:
    instances: 2
    dockerImage: img
    resourcePerInstance: {{cpu: 1, memoryMB: 512, gpu: 1}}
    commands: [python train.py]
"""


def pod_specs(flavor: str, image: str) -> list[dict]:
    job = parse_job(job_with(image)).job
    settings = HivedSettings(cpu_sku="CPU") if flavor == "hived" else None
    built = FLAVORS[flavor](OPTIONS, settings).build(job, make_names(job, "alice"))
    found = []

    def walk(value: object) -> None:
        if isinstance(value, dict):
            if "containers" in value:
                found.append(value)
            for v in value.values():
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)

    walk([o for o in built.objects])
    return found


@pytest.mark.parametrize("flavor", sorted(FLAVORS))
def test_every_flavors_pods_pull_with_their_registrys_secret(flavor: str) -> None:
    specs = pod_specs(flavor, "harbor.example.com/team/pytorch:2.4")
    assert specs, "no pod template found"
    assert all(s.get("imagePullSecrets") == [{"name": "team-registry"}] for s in specs)
    public = pod_specs(flavor, "pytorch/pytorch:2.4.0-cuda12.1-cudnn9-runtime")
    assert all("imagePullSecrets" not in s for s in public)


@pytest.mark.parametrize(
    ("image", "host"),
    [
        ("python:3.11", "docker.io"),
        ("pytorch/pytorch:2.4", "docker.io"),
        ("127.0.0.1:5000/team/app:1", "127.0.0.1:5000"),
        ("localhost/app", "localhost"),
        ("nvcr.io/nvidia/pytorch:24.05-py3", "nvcr.io"),
        ("harbor.example.com/team/app@sha256:" + "a" * 64, "harbor.example.com"),
    ],
)
def test_registry_host_reads_references_as_docker_does(image: str, host: str) -> None:
    assert registry_host(image) == host


def test_registries_pull_secrets_reach_the_kubernetes_backend() -> None:
    from traitlets.config import Config

    config = Config()
    config.PAIConfig.backend = "kubernetes"
    config.PAIConfig.image_registries = [
        {"url": "https://harbor.example.com", "kind": "harbor", "pullSecret": "robot"},
        {"url": "http://127.0.0.1:5000", "kind": "oci"},
    ]
    config.KubernetesBackend.image_pull_secrets = {"nvcr.io": "ngc"}
    backend = PAIConfig(config=config).make_backend(namespace="alice")
    assert backend.options.image_pull_secrets == {"harbor.example.com": "robot", "nvcr.io": "ngc"}


def test_credentials_from_docker_config_documents() -> None:
    encoded = base64.b64encode(b"robot$ci:s3cret:with:colons").decode()
    document = {
        "auths": {
            "https://index.docker.io/v1/": {"auth": base64.b64encode(b"hub:pw").decode()},
            "harbor.example.com": {"auth": encoded},
            "127.0.0.1:5000": {"username": "alice", "password": "pw"},
        }
    }
    assert credentials_for(document, "harbor.example.com") == ("robot$ci", "s3cret:with:colons")
    assert credentials_for(document, "127.0.0.1:5000") == ("alice", "pw")
    assert credentials_for(document, "index.docker.io") == ("hub", "pw")
    assert credentials_for(document, "elsewhere.example.com") is None
    assert credentials_for({"username": "u", "password": "p"}, "any") == ("u", "p")
    assert credentials_for({"auths": {"h": {"auth": "%%%"}}}, "h") is None


def test_gpu_nodes_images_are_counted_cpu_nodes_are_not() -> None:
    def node(gpus: str, *names: list[str]) -> dict:
        return {
            "status": {
                "allocatable": {"nvidia.com/gpu": gpus},
                "images": [{"names": n, "sizeBytes": 1} for n in names],
            }
        }

    app = ["127.0.0.1:5000/team/app:1", "127.0.0.1:5000/team/app@sha256:" + "b" * 64]
    nodes = [
        node("8", app, ["docker.io/library/python:3.11"]),
        node("4", app),
        node("0", app),
        {"status": {}},
    ]
    counts = gpu_node_images(nodes, "nvidia.com/gpu")
    assert counts["127.0.0.1:5000/team/app:1"] == 2
    assert counts["docker.io/library/python:3.11"] == 1
