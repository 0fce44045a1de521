"""Pods for a namespace's Pod Security level (kubernetes/podsecurity.py): under
``restricted`` every pod of every flavor, and the storage helper, carries the fields the
level asks; under ``baseline`` pods stay as the golden manifests have them; the ssh plugin
is refused under ``restricted``, naming its field. The API server's own verdict on these
pods is in tests/kube/test_pod_security.py."""

from __future__ import annotations

import dataclasses

import pytest

from jupyter_pai.backends.kubernetes.flavors import FLAVORS, HivedSettings
from jupyter_pai.backends.kubernetes.naming import make_names
from jupyter_pai.backends.kubernetes.pods import PodOptions
from jupyter_pai.backends.kubernetes.podsecurity import PodSecurity
from jupyter_pai.backends.kubernetes.storage import HelperPods
from jupyter_pai.errors import SpecError
from jupyter_pai.spec import parse_job
from tests.podspecs import pod_templates

from .test_kube_builders import TWO_ROLES

RESTRICTED = PodOptions(namespace="alice", security=PodSecurity("restricted"))

SSH = """
protocolVersion: 2
name: with-ssh
type: job
taskRoles:
  worker:
    instances: 2
    resourcePerInstance: {cpu: 1, memoryMB: 512, gpu: 0, ports: {ssh: 1}}
    commands: ['true']
extras:
  com.microsoft.pai.runtimeplugin:
    - plugin: ssh
      parameters: {jobssh: true}
"""


def _restricted(spec: dict[str, object]) -> None:
    assert spec["securityContext"] == {
        "runAsNonRoot": True,
        "seccompProfile": {"type": "RuntimeDefault"},
        "runAsUser": 1000,
        "runAsGroup": 100,
        "fsGroup": 100,
    }
    for container in spec["containers"]:  # type: ignore[attr-defined]
        assert container["securityContext"] == {
            "allowPrivilegeEscalation": False,
            "capabilities": {"drop": ["ALL"]},
        }


@pytest.mark.parametrize("flavor", sorted(FLAVORS))
def test_every_pod_of_every_flavor_meets_restricted(flavor: str) -> None:
    job = parse_job(TWO_ROLES).job
    settings = HivedSettings(cpu_sku="CPU") if flavor == "hived" else None
    built = FLAVORS[flavor](RESTRICTED, settings).build(job, make_names(job, "alice"))
    found = [(where, t) for obj in built.objects for where, t in pod_templates(obj)]
    assert found, "no pod template found"
    for _where, template in found:
        _restricted(template["spec"])


def test_baseline_leaves_pods_as_they_are() -> None:
    job = parse_job(TWO_ROLES).job
    for flavor in sorted(FLAVORS):
        settings = HivedSettings(cpu_sku="CPU") if flavor == "hived" else None
        built = FLAVORS[flavor](PodOptions(namespace="alice"), settings).build(
            job, make_names(job, "alice")
        )
        for obj in built.objects:
            for _where, template in pod_templates(obj):
                assert "securityContext" not in template["spec"]


def test_the_storage_helper_meets_restricted() -> None:
    helpers = HelperPods(None, "alice", "alice", "python:3.11-slim", RESTRICTED)  # type: ignore[arg-type]
    _restricted(helpers.manifest("data", "token")["spec"])
    as_image = dataclasses.replace(RESTRICTED, security=PodSecurity("restricted", None, None))
    spec = HelperPods(None, "alice", "alice", "img", as_image).manifest("data", "t")["spec"]  # type: ignore[arg-type]
    assert spec["securityContext"] == {
        "runAsNonRoot": True,
        "seccompProfile": {"type": "RuntimeDefault"},
    }


def test_ssh_is_refused_under_restricted_naming_the_plugin() -> None:
    job = parse_job(SSH).job
    assert PodSecurity("baseline").refusals(job) == []
    [refusal] = PodSecurity("restricted").refusals(job)
    assert refusal.path == "extras.com.microsoft.pai.runtimeplugin.0"
    assert "Pod Security level restricted" in refusal.message
    assert "level baseline" in refusal.message


def test_an_unknown_level_is_refused() -> None:
    with pytest.raises(ValueError, match="pod_security is 'privileged': choose baseline or"):
        PodSecurity("privileged")


def test_spec_error_type() -> None:
    # Refusals become the SpecError a submission answers with (400, each field named).
    error = SpecError(PodSecurity("restricted").refusals(parse_job(SSH).job))
    assert "runtime plugin ssh" in str(error)
