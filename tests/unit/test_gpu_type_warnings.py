"""A GPU type is placed where the backend can place by it (every Kubernetes flavor); the
local backend, whose GPUs have no types, says so at submission instead of running on any
GPU in silence. A type alone asks Volcano for no priority class."""

from __future__ import annotations

import pytest

from jupyter_pai.backends.kubernetes import KubernetesBackend
from jupyter_pai.backends.kubernetes.flavors import FLAVORS
from jupyter_pai.backends.kubernetes.naming import make_names
from jupyter_pai.backends.kubernetes.pods import PodOptions
from jupyter_pai.backends.local import LocalBackend
from jupyter_pai.spec import parse_job

TYPED = {"name": "t", "image": "python:3.11", "command": ["echo"], "gpus": "A100-40GB:2"}
PLAIN = {"name": "t", "image": "python:3.11", "command": ["echo"], "gpus": 2}


def test_the_local_backend_warns_that_it_does_not_place_by_type() -> None:
    [warning] = LocalBackend().submission_warnings(parse_job(TYPED).job)
    assert warning.path == "extras.hivedScheduler.taskRoles.worker.skuType"
    assert "'A100-40GB' is not placed by this backend yet" in warning.message
    assert LocalBackend().submission_warnings(parse_job(PLAIN).job) == []


@pytest.mark.parametrize("flavor", ["native", "volcano", "kueue", "hived"])
def test_every_kubernetes_flavor_places_by_type(flavor: str) -> None:
    backend = KubernetesBackend(flavor=flavor, namespace="alice", hived_cpu_sku="CPU")
    found = backend.submission_warnings(parse_job(TYPED).job)
    assert not any("not placed by this backend" in w.message for w in found)


def test_a_type_alone_asks_volcano_for_no_priority_class() -> None:
    typed = parse_job(TYPED).job
    built = FLAVORS["volcano"](PodOptions(namespace="alice")).build(typed, make_names(typed, "a"))
    assert "priorityClassName" not in built.objects[built.primary]["spec"]
    prod = dict(TYPED, extras={"hivedScheduler": {"jobPriorityClass": "prod"}})
    named = parse_job(prod).job
    built = FLAVORS["volcano"](PodOptions(namespace="alice")).build(named, make_names(named, "a"))
    assert built.objects[built.primary]["spec"]["priorityClassName"] == "pai-prod"
