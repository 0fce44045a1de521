"""Unit tests of the pod runner's pure parts: environment resolution and /etc/hosts."""

from __future__ import annotations

from pathlib import Path

import pytest

from . import hostsfile, podenv

POD = {
    "metadata": {"name": "w-0", "namespace": "alice", "uid": "u1", "labels": {"app": "x"}},
    "spec": {"nodeName": "runner-0"},
    "status": {"podIP": "127.73.0.5"},
}
DATA = {("ConfigMap", "cfg"): {"a": "1", "b": "2"}, ("Secret", "sec"): {"tok": "t"}}


def lookup(kind: str, namespace: str, name: str) -> dict[str, str] | None:
    return DATA.get((kind, name))


def test_env_sources_and_expansion() -> None:
    container = {
        "envFrom": [{"configMapRef": {"name": "cfg"}, "prefix": "C_"}],
        "env": [
            {"name": "NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
            {"name": "IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
            {"name": "APP", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['app']"}}},
            {"name": "TOK", "valueFrom": {"secretKeyRef": {"name": "sec", "key": "tok"}}},
            {"name": "URL", "value": "http://$(IP):80/$(MISSING)/$$(IP)"},
            {
                "name": "OPT",
                "valueFrom": {"configMapKeyRef": {"name": "no", "key": "k", "optional": True}},
            },
        ],
        "command": ["echo", "$(NAME)"],
    }
    env = podenv.container_env(POD, container, lookup)
    assert env == {
        "C_a": "1",
        "C_b": "2",
        "NAME": "w-0",
        "IP": "127.73.0.5",
        "APP": "x",
        "TOK": "t",
        "URL": "http://127.73.0.5:80/$(MISSING)/$(IP)",
    }
    assert podenv.container_argv(container, env) == ["echo", "w-0"]


def test_missing_reference_is_an_error() -> None:
    container = {"env": [{"name": "X", "valueFrom": {"secretKeyRef": {"name": "no", "key": "k"}}}]}
    with pytest.raises(podenv.EnvError):
        podenv.container_env(POD, container, lookup)


def test_resource_field_ref() -> None:
    container = {
        "resources": {"limits": {"cpu": "1500m", "memory": "2Gi"}},
        "env": [
            {"name": "CPU", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu"}}},
            {
                "name": "MEM",
                "valueFrom": {"resourceFieldRef": {"resource": "limits.memory", "divisor": "1Mi"}},
            },
        ],
    }
    assert podenv.container_env(POD, container, lookup) == {"CPU": "2", "MEM": "2048"}


def test_hosts_block_is_replaced_and_removed(tmp_path: Path) -> None:
    hosts = tmp_path / "hosts"
    hosts.write_text("127.0.0.1 localhost\n")
    names = hostsfile.pod_names("p", "alice", "w-0", "peers")
    hostsfile.set_block("m", [("127.73.0.5", names)], hosts)
    hostsfile.set_block("m", [("127.73.0.6", names)], hosts)
    text = hosts.read_text()
    assert "127.73.0.5" not in text
    assert "127.73.0.6 w-0.peers.alice.svc.cluster.local" in text
    hostsfile.remove_block("m", hosts)
    assert hosts.read_text() == "127.0.0.1 localhost\n"


def test_hived_binding_becomes_cuda_visible_devices() -> None:
    bound = {"metadata": {"annotations": {podenv.HIVED_ISOLATION: "2,3"}}}
    assert podenv.gpu_env(bound) == {"CUDA_VISIBLE_DEVICES": "2,3"}
    assert podenv.gpu_env({"metadata": {}}) == {}


def test_a_task_on_hived_cpu_cells_sees_no_gpu() -> None:
    on_cpu_cells = {
        "metadata": {"annotations": {podenv.HIVED_ISOLATION: "5"}},
        "spec": {"containers": [{"env": [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "void"}]}]},
    }
    assert podenv.gpu_env(on_cpu_cells) == {}
