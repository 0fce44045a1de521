"""JupyterHub end to end: alice (group ``research``) and bob (no group) sign in through
Chromium; KubeSpawner starts each one's server as a pod in their own namespace
(configure_kubespawner), which the test cluster's pod runner really runs, with the pod's
service account token as its only credentials.

Alice's panel offers VCs ``default`` and ``research``, bob's only ``default``; alice's
two-role volcano job runs on the runner node and succeeds with its log in her panel; bob's
panel and API show no trace of it, and bob's server's own token gets 403 from the API
server for alice's pods, logs and Secrets. A named server ``kueue`` of alice's runs
jupyter-pai on the kueue flavor: a two-role job submitted through its REST API (via the
hub's proxy, with alice's token) succeeds."""

from __future__ import annotations

import time
import urllib.error
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from playwright.sync_api import expect

from tests.ui.conftest import job_row, open_panel, shot

from .conftest import Hub

# Cluster start, two spawns and a job: more than the default 300 s on a loaded machine.
pytestmark = [pytest.mark.kube, pytest.mark.ui, pytest.mark.timeout(600)]
WORKER = "for i in 1 2 3; do echo worker $PAI_TASK_INDEX step $i; sleep 1; done"
# A parameter server serves until the workers are done: OpenPAI's completion policy ends
# the job (SUCCEEDED) when every worker has succeeded, and the ps is stopped.
PS = "echo ps ready; sleep 120"


def sign_in(browser: Any, hub: Hub, user: str, screenshot: str | None = None) -> Any:
    """A page where ``user`` signed in at the hub's login form and their server (spawned
    on the way) shows JupyterLab."""
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    page.set_default_timeout(30_000)
    page.goto(f"{hub.url}hub/login")
    page.fill("#username_input", user)
    page.fill("#password_input", hub.password)
    if screenshot:
        shot(page, screenshot)
    page.click("#login_submit")
    # The hub spawns the pod and redirects to it once the server answers.
    page.wait_for_url(f"**/user/{user}/lab**", timeout=180_000)
    page.goto(f"{hub.url}user/{user}/lab?reset")  # a fresh workspace
    page.wait_for_selector("#jp-main-dock-panel", state="attached", timeout=60_000)
    return page


def vc_options(page: Any) -> list[str]:
    open_panel(page, "launch")
    select = page.locator(".jp-PAI-launch [data-path='defaults.virtualCluster'] select")
    # The VCs the server lists read "<name> — N of M GPUs free" (a form's own VC before
    # the list has loaded reads just its name).
    listed = select.locator("option", has_text="GPUs free")
    expect(listed.first).to_be_attached(timeout=60_000)
    return [str(v) for v in listed.evaluate_all("os => os.map(o => o.value)")]


def pod_token(hub: Hub, namespace: str, pod: str) -> tuple[str, Path]:
    """The service account token the pod runner projected into ``pod`` (what its
    server authenticates with), and the cluster CA beside it."""
    pods = Path(hub.cluster.state.directory) / "runner" / "pods"
    tokens = sorted(pods.glob(f"{namespace}_{pod}_*/projected/*/token"))
    assert tokens, f"no service account token projected into {namespace}/{pod} under {pods}"
    return tokens[-1].read_text(), tokens[-1].parent / "ca.crt"


def core_as(hub: Hub, token: str, ca: Path) -> Any:
    cfg = client.Configuration()
    cfg.host = hub.cluster.state.server
    cfg.api_key = {"authorization": f"Bearer {token}"}
    cfg.ssl_ca_cert = str(ca)
    return client.CoreV1Api(client.ApiClient(cfg))


def forbidden(call: Any, *args: Any, **kwargs: Any) -> int:
    try:
        call(*args, **kwargs)
    except ApiException as error:
        return int(error.status)
    return 200


def wait_job(hub: Hub, user: str, token: str, job_id: str, server: str = "") -> dict[str, Any]:
    deadline = time.monotonic() + 180
    while True:
        job: dict[str, Any] = hub.pai(user, token, f"jobs/{job_id}", server=server)
        if job["state"] in ("SUCCEEDED", "FAILED", "STOPPED"):
            return job
        assert time.monotonic() < deadline, f"{job_id} is still {job['state']}: {job}"
        time.sleep(1)


def test_two_users_volcano(browser: Any, hub: Hub) -> None:
    stamp = int(time.time())
    name = f"hub-e2e-{stamp}"

    alice = sign_in(browser, hub, "alice", screenshot="hub-1-login")
    assert vc_options(alice) == ["default", "research"]
    expect(alice.locator(".jp-PAI-info-backend")).to_contain_text("kubernetes (volcano)")

    # A two-role job through the launch form: 2 workers and 1 ps, no GPU.
    form = alice.locator(".jp-PAI-launch")
    form.locator("[data-path='name'] input").fill(name)
    form.locator("[data-path='defaults.virtualCluster'] select").select_option("research")
    form.get_by_role("button", name="+ Add task role").click()
    form.locator("[data-path='taskRoles.worker_1'] input").fill("ps")
    for role, instances, command in (("worker", "2", WORKER), ("ps", "1", PS)):
        at = f"[data-path='taskRoles.{role}"
        form.locator(f"{at}.instances'] input").fill(instances)
        form.locator(f"{at}.resourcePerInstance.gpu'] input").fill("0")
        form.locator(f"{at}.resourcePerInstance.cpu'] input").fill("1")
        form.locator(f"{at}.resourcePerInstance.memoryMB'] input").fill("128")
        form.locator(f"{at}.commands'] textarea").fill(command)
    form.locator(".jp-PAI-submit").click()
    detail = alice.locator(".jp-PAI-detail-panel")
    try:
        expect(detail.locator(".jp-PAI-detail-head h2")).to_have_text(name, timeout=60_000)
    finally:
        shot(alice, "hub-2-alice-submitted")

    open_panel(alice, "jobs")
    state = job_row(alice, name).locator(".jp-PAI-col-state")
    expect(state).to_have_text("SUCCEEDED", timeout=180_000)
    for task in ("worker-0", "worker-1"):
        row = detail.locator(f"tr[data-task='{task}']")
        expect(row).to_contain_text("SUCCEEDED")
        expect(row).to_contain_text("runner-0")
    detail.locator("tr[data-task='worker-1']").get_by_role("button", name="Show log").click()
    log = detail.locator(".jp-PAI-log")
    expect(log.locator(".jp-PAI-log-line", has_text="worker 1 step 3")).to_be_visible(
        timeout=30_000
    )
    shot(alice, "hub-3-alice-succeeded")

    alice_token = hub.user_token("alice")
    info = hub.pai("alice", alice_token, "info")
    assert (info["user"], info["namespace"], info["flavor"]) == ("alice", "alice", "volcano")
    job = hub.pai("alice", alice_token, f"jobs/alice%7E{name}")
    assert job["state"] == "SUCCEEDED", job
    worker_log = hub.pai_text("alice", alice_token, f"jobs/alice%7E{name}/logs?role=worker&index=0")
    assert "worker 0 step 3" in worker_log, worker_log

    bob = sign_in(browser, hub, "bob")
    try:
        assert vc_options(bob) == ["default"]
    finally:
        shot(bob, "hub-4-bob-launch")
    open_panel(bob, "jobs")
    jobs = bob.locator("#jp-PAI-section-jobs")
    expect(jobs).not_to_contain_text("Loading jobs")
    expect(jobs).not_to_contain_text(name)
    expect(job_row(bob, name)).to_have_count(0)
    shot(bob, "hub-5-bob-jobs")

    bob_token = hub.user_token("bob")
    listed = hub.pai("bob", bob_token, "jobs")["items"]
    assert [j["id"] for j in listed if name in j["id"]] == [], listed
    with pytest.raises(urllib.error.HTTPError) as denied:
        hub.pai("bob", bob_token, f"jobs/alice%7E{name}")
    assert denied.value.code == 404, denied.value  # bob's server looks in bob's namespace
    # Alice's token is hers only: bob's server refuses it.
    with pytest.raises(urllib.error.HTTPError) as refused:
        hub.pai("bob", alice_token, "info")
    assert refused.value.code == 403, refused.value

    # Bob's server's own credentials (its pod's service account token): its namespace
    # yes, alice's pods, logs and Secrets no.
    token, ca = pod_token(hub, "bob", "jupyter-bob")
    as_bob = core_as(hub, token, ca)
    as_bob.list_namespaced_pod("bob")
    admin = hub.cluster.core()
    pods = admin.list_namespaced_pod(
        "alice", label_selector="app.kubernetes.io/managed-by=jupyter-pai"
    )
    job_pods = [p.metadata.name for p in pods.items if name in p.metadata.name]
    assert job_pods, [p.metadata.name for p in pods.items]
    secret = admin.create_namespaced_secret(
        "alice", {"metadata": {"generateName": "hub-e2e-"}, "stringData": {"key": "alice's"}}
    ).metadata.name
    assert forbidden(as_bob.list_namespaced_pod, "alice") == 403
    assert forbidden(as_bob.read_namespaced_pod, job_pods[0], "alice") == 403
    assert forbidden(as_bob.read_namespaced_pod_log, job_pods[0], "alice") == 403
    assert forbidden(as_bob.list_namespaced_secret, "alice") == 403
    assert forbidden(as_bob.read_namespaced_secret, secret, "alice") == 403
    admin.delete_namespaced_secret(secret, "alice")
    for page in (alice, bob):
        page.context.close()


def test_kueue_named_server(hub: Hub) -> None:
    """Alice's named server ``kueue``: submit → SUCCEEDED through its REST API."""
    hub.spawn("alice", "kueue")
    token = hub.user_token("alice")
    info = hub.pai("alice", token, "info", server="kueue")
    assert (info["flavor"], info["namespace"]) == ("kueue", "alice"), info
    vcs = [v["name"] for v in hub.pai("alice", token, "virtual-clusters", server="kueue")["items"]]
    assert vcs == ["default", "research"], vcs

    name = f"hub-kueue-{int(time.time())}"
    role = {
        "dockerImage": "img",
        "resourcePerInstance": {"cpu": 1, "memoryMB": 128, "gpu": 0},
    }
    spec = {
        "protocolVersion": 2,
        "name": name,
        "type": "job",
        "prerequisites": [{"name": "img", "type": "dockerimage", "uri": "python:3.11"}],
        "defaults": {"virtualCluster": "research"},
        "taskRoles": {
            "worker": {**role, "instances": 2, "commands": [WORKER]},
            "ps": {**role, "instances": 1, "commands": [PS]},
        },
    }
    job = hub.pai("alice", token, "jobs", server="kueue", method="POST", body=spec)["job"]
    assert job["id"] == f"alice~{name}", job
    ended = wait_job(hub, "alice", token, f"alice%7E{name}", server="kueue")
    assert ended["state"] == "SUCCEEDED", ended
    log = hub.pai_text(
        "alice", token, f"jobs/alice%7E{name}/logs?role=worker&index=1", server="kueue"
    )
    assert "worker 1 step 3" in log, log
