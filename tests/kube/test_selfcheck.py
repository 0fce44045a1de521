"""``jupyter pai check`` against the real API server's RBAC: alice, bound as the test
cluster binds her, holds every permission her flavor uses; without her RoleBinding the
check names what she lacks in words, and the CLI exits 6."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from jupyter_pai.backends.kubernetes import KubernetesBackend
from jupyter_pai.backends.kubernetes.permissions import required
from tests.cluster import kube, manifests
from tests.cluster.pytest_plugin import TestCluster
from tests.kube.rest_server import *  # noqa: F403
from tests.kube.test_backend_jobs import flavor_settings, make_backend

pytestmark = pytest.mark.kube
NS = "alice"
BINDING = "jupyter-pai-user"


def run_cli(cluster: TestCluster, flavor: str, *args: str) -> subprocess.CompletedProcess[str]:
    """``jupyter pai check`` as alice would run it: her kubeconfig, the flavor's settings."""
    settings = flavor_settings(cluster, flavor)
    env = {
        **os.environ,
        "JUPYTER_PAI_BACKEND": "kubernetes",
        "JUPYTER_PAI_FLAVOR": flavor,
        "JUPYTER_PAI_USER": "alice",
        "JUPYTER_PAI_NAMESPACE": NS,
        "JUPYTER_PAI_HIVED_URL": settings.get("hived_url", ""),
        "JUPYTER_PAI_PROMETHEUS_URL": "",
        "KUBECONFIG": str(cluster.user_kubeconfigs["alice"]),
    }
    return subprocess.run(
        [sys.executable, "-m", "jupyter_pai.cli", "check", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def allowed(cluster: TestCluster, verb: str, group: str, resource: str) -> bool:
    """What the API server's authorizer answers alice now (its RBAC cache lags a write)."""
    review = client.V1SelfSubjectAccessReview(
        spec=client.V1SelfSubjectAccessReviewSpec(
            resource_attributes=client.V1ResourceAttributes(
                namespace=NS, verb=verb, group=group, resource=resource
            )
        )
    )
    answer = client.AuthorizationV1Api(cluster.api("alice")).create_self_subject_access_review(
        review
    )
    return bool(answer.status.allowed)


def until(condition: Any, what: str, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.2)


@contextlib.contextmanager
def without_binding(cluster: TestCluster) -> Iterator[None]:
    """Alice without her RoleBinding in her namespace (her cluster-wide reads stay), put
    back afterwards, whatever happened meanwhile."""
    rbac = client.RbacAuthorizationV1Api(cluster.api())
    rbac.delete_namespaced_role_binding(BINDING, NS)
    try:
        until(
            lambda: not allowed(cluster, "create", "", "pods"),
            "the API server still allows alice what her binding granted",
        )
        yield
    finally:
        binding = next(m for m in manifests.user_bindings(NS) if m["kind"] == "RoleBinding")
        try:
            kube.apply(cluster.api(), [binding])
        except ApiException as error:  # said loudly, never swallowed
            raise AssertionError(f"could not restore alice's RoleBinding: {error}") from error
        until(
            lambda: allowed(cluster, "create", "", "pods"),
            "alice's RoleBinding is back but the API server does not allow her yet",
        )


@pytest.fixture
def unbound(kube_cluster: TestCluster) -> Iterator[None]:
    with without_binding(kube_cluster):
        yield


async def test_alice_holds_every_permission_of_her_flavor(
    kube_cluster: TestCluster, flavor: str
) -> None:
    backend = make_backend(kube_cluster, flavor)  # not started: credentials suffice
    report = await backend.self_check()
    assert report.missing == [], [m.message for m in report.missing]
    assert report.ok, report.reachability
    assert (report.backend, report.flavor, report.namespace, report.user) == (
        "kubernetes",
        flavor,
        NS,
        "alice",
    )
    assert report.checked == len(required(flavor))
    names = [r.name for r in report.reachability]
    assert names[0] == "API server" and names[1].startswith("scheduler ("), names
    if flavor == "hived":  # its URL is configured: it must answer
        assert "HiveD" in names, names


@pytest.mark.parametrize("flavor", ["volcano"])
async def test_the_server_checks_at_its_first_request_and_logs_nothing_missing(
    jp_fetch: Any, jp_serverapp: Any, flavor: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("INFO")
    await jp_fetch("pai", "api", "virtual-clusters")  # starts the backend
    context = jp_serverapp.web_app.settings["jupyter_pai"]
    assert context._check is not None
    await context._check  # the background check of the first request
    report = await (await context.backend()).self_check()
    assert report.ok and report.checked == len(required(flavor)), report
    messages = [r.getMessage() for r in caplog.records if "self-check" in r.getMessage()]
    assert messages == [f"jupyter-pai: self-check: all {report.checked} permissions held"]


async def test_without_her_rolebinding_the_check_names_what_alice_lacks(
    kube_cluster: TestCluster, unbound: None
) -> None:
    backend = make_backend(kube_cluster, "volcano")
    report = await backend.self_check()
    assert not report.ok
    by_key = {(m.group, m.resource, m.verb): m for m in report.missing}
    create = by_key[("batch.volcano.sh", "jobs", "create")]
    assert create.message.startswith(
        "cannot create batch.volcano.sh/jobs in namespace alice — ask your admin to bind "
        "jupyter-pai-user; without it you cannot submit a job"
    ), create.message
    assert by_key[("", "pods/log", "get")].message.startswith("cannot get pods/log in namespace")
    # The namespace's permissions are gone; the cluster-wide reads are another binding's.
    namespaced = [p for p in required("volcano") if not p.cluster]
    assert len(report.missing) == len(namespaced)
    assert all(m.namespace == NS for m in report.missing)


@pytest.mark.parametrize("flavor", ["volcano"])
def test_the_cli_exits_0_when_all_are_held(kube_cluster: TestCluster, flavor: str) -> None:
    done = run_cli(kube_cluster, flavor)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"all {len(required(flavor))} permissions the {flavor} flavor uses are held" in (
        done.stdout
    )
    assert "ok: API server:" in done.stdout
    as_json = run_cli(kube_cluster, flavor, "--json")
    assert as_json.returncode == 0, as_json.stderr
    doc = json.loads(as_json.stdout)
    assert doc["ok"] is True and doc["missing"] == [] and doc["namespace"] == NS


@pytest.mark.parametrize("flavor", ["volcano"])
def test_the_cli_exits_6_naming_each_missing_permission(
    kube_cluster: TestCluster, flavor: str, unbound: None
) -> None:
    done = run_cli(kube_cluster, flavor)
    assert done.returncode == 6, done.stdout + done.stderr
    assert (
        "MISSING: cannot create batch.volcano.sh/jobs in namespace alice — ask your admin to "
        "bind jupyter-pai-user" in done.stdout
    ), done.stdout
    as_json = run_cli(kube_cluster, flavor, "--json")
    assert as_json.returncode == 6, as_json.stderr
    doc = json.loads(as_json.stdout)
    assert doc["ok"] is False
    assert {"group": "", "resource": "pods/log", "verb": "get"}.items() <= next(
        m for m in doc["missing"] if m["resource"] == "pods/log"
    ).items()
    assert all(m["why"] and m["message"].startswith("cannot ") for m in doc["missing"])


def test_the_cli_exits_5_when_the_api_server_does_not_answer(tmp_path: Path) -> None:
    """No cluster at all (a kubeconfig naming a closed port): unreachable, not missing."""
    config = tmp_path / "kubeconfig"
    config.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1"}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    env = {**os.environ, "JUPYTER_PAI_BACKEND": "kubernetes", "KUBECONFIG": str(config)}
    done = subprocess.run(
        [sys.executable, "-m", "jupyter_pai.cli", "check"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 5, done.stdout + done.stderr
    assert "FAILED: API server: https://127.0.0.1:1" in done.stdout


@pytest.mark.parametrize("flavor", ["volcano"])
async def test_the_server_serves_the_check(jp_fetch: Any, flavor: str) -> None:
    """``GET check`` on a Jupyter server whose backend is alice's (tests/kube/rest_server)."""
    resp = await jp_fetch("pai", "api", "check")
    doc = json.loads(resp.body)
    assert (doc["ok"], doc["flavor"], doc["namespace"], doc["user"]) == (
        True,
        flavor,
        NS,
        "alice",
    ), doc
    assert doc["checked"] == len(required(flavor)) and doc["missing"] == []
    assert [r["name"] for r in doc["reachability"]][:2] == ["API server", "scheduler (Volcano)"]


async def test_a_wrong_token_is_said_to_be_refused(
    kube_cluster: TestCluster, tmp_path: Path
) -> None:
    config = yaml.safe_load(kube_cluster.user_kubeconfigs["alice"].read_text())
    for user in config["users"]:
        user["user"] = {"token": "not-alices-token"}
    wrong = tmp_path / "kubeconfig"
    wrong.write_text(yaml.safe_dump(config))
    backend = KubernetesBackend(kubeconfig=str(wrong), flavor="volcano", user="alice")
    report = await backend.self_check()
    assert (report.ok, report.checked, report.missing) == (False, 0, [])
    [api_server] = report.reachability
    assert api_server.name == "API server" and not api_server.ok
    assert api_server.detail.endswith("refused the credentials (401: Unauthorized)"), api_server
