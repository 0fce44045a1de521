"""OpenPAI's completion policy is enforced with no one asking for the job.

Jobs are submitted with the CLI (a subprocess, ``jupyter pai submit``) as a user would:

* volcano: no jupyter-pai process runs after the submission; Volcano's controller ends the
  job from the policies in the vcjob;
* kueue: no jupyter-pai process runs after the submission; JobSet's controller ends the
  job from its success/failure policies and its Jobs' ``successPolicy`` /
  ``maxFailedIndexes`` (which count, so minFailedInstances 2 is the cluster's too);
* native: batch Jobs cannot express the rule, so one started backend (nobody calling it)
  ends the job from its watch cache; ``submit --wait`` finishes the ending it starts.

"No pod Running" is read with the cluster admin's client, never through jupyter-pai."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from jupyter_pai.backends.kubernetes.naming import ANN_OUTCOME, LABEL_JOB, make_names
from jupyter_pai.spec import parse_job
from tests.cluster.pytest_plugin import TestCluster
from tests.kube.test_backend_jobs import NS, OWNED, RUNNER, _cleanup, make_backend

pytestmark = pytest.mark.kube

#: What the issue asks: decided → SUCCEEDED and no pod Running within this many seconds.
WITHIN = 30.0

CHIEF_WORKERS = """
protocolVersion: 2
name: {name}
type: job
taskRoles:
  chief:
    instances: 1
    completion: {{minSucceededInstances: 1}}
    resourcePerInstance: {{cpu: 1, memoryMB: 128, gpu: 0}}
    commands: ['sleep 3', 'echo chief done']
  worker:
    instances: 2
    resourcePerInstance: {{cpu: 1, memoryMB: 128, gpu: 0}}
    commands: ['sleep 600']
"""

# Worker 1 fails (exit 3) while worker 0 and the chief run on: minFailedInstances decides.
WORKER_FAILS = """
protocolVersion: 2
name: {name}
type: job
taskRoles:
  chief:
    instances: 1
    completion: {{minSucceededInstances: -1}}
    resourcePerInstance: {{cpu: 1, memoryMB: 128, gpu: 0}}
    commands: ['sleep 600']
  worker:
    instances: 2
    completion: {{minFailedInstances: {min_failed}}}
    resourcePerInstance: {{cpu: 1, memoryMB: 128, gpu: 0}}
    commands:
      - 'if [ "$PAI_CURRENT_TASK_ROLE_CURRENT_TASK_INDEX" {fails} ]; then sleep 3; exit 3; fi'
      - 'sleep 600'
"""


@pytest.fixture
def cli(kube_cluster: TestCluster, tmp_path: Path) -> Any:
    """``jupyter pai …`` as alice, pods on the runner node (config file + environment)."""
    config = tmp_path / "config"
    config.mkdir()
    (config / "jupyter_pai_config.json").write_text(
        json.dumps({"KubernetesBackend": {"node_selector": RUNNER}})
    )
    _cleanup(kube_cluster, NS)

    def run(flavor: str, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        env = {
            **os.environ,
            "JUPYTER_PAI_BACKEND": "kubernetes",
            "JUPYTER_PAI_FLAVOR": flavor,
            "JUPYTER_PAI_USER": "alice",
            "JUPYTER_CONFIG_DIR": str(config),
            "KUBECONFIG": str(kube_cluster.user_kubeconfigs["alice"]),
        }
        return subprocess.run(
            [sys.executable, "-m", "jupyter_pai.cli", *args],
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def submit(flavor: str, text: str, *extra: str) -> tuple[str, str]:
        """(job id, base name of its objects)."""
        spec = tmp_path / "job.yaml"
        spec.write_text(text)
        done = run(flavor, "submit", str(spec), "--json", *extra, timeout=120)
        assert done.returncode in (0, 1), done.stderr
        return str(json.loads(done.stdout)["id"]), make_names(parse_job(text).job, "alice").base

    def show(flavor: str, job_id: str) -> dict[str, Any]:
        done = run(flavor, "show", job_id, "--json")
        assert done.returncode == 0, done.stderr
        return dict(json.loads(done.stdout))

    run.submit = submit  # type: ignore[attr-defined]
    run.show = show  # type: ignore[attr-defined]
    yield run
    _cleanup(kube_cluster, NS)


def _pods(cluster: TestCluster, base: str) -> list[Any]:
    core = client.CoreV1Api(cluster.api())
    return list(core.list_namespaced_pod(NS, label_selector=f"{OWNED},{LABEL_JOB}={base}").items)


def _role(pod: Any) -> str:
    return str(pod.metadata.labels.get("jupyter-pai.io/role"))


async def _wait_decided_then_ended(
    cluster: TestCluster, base: str, role: str, phase: str
) -> tuple[float, float]:
    """Seconds from the deciding pod of ``role`` reaching ``phase`` (seen here, polled every
    0.2 s) until no pod of the job is Running, and from that pod's own finishedAt."""
    deadline = time.monotonic() + 120
    while True:
        pods = _pods(cluster, base)
        if any(_role(p) == role and p.status.phase == phase for p in pods):
            break
        assert time.monotonic() < deadline, [(p.metadata.name, p.status.phase) for p in pods]
        await asyncio.sleep(0.2)
    decided = time.monotonic()
    decider = next(p for p in pods if _role(p) == role and p.status.phase == phase)
    finished = decider.status.container_statuses[0].state.terminated.finished_at
    while True:
        pods = _pods(cluster, base)
        running = [p.metadata.name for p in pods if p.status.phase == "Running"]
        if not running:
            ended = time.monotonic()
            from_exit = time.time() - finished.timestamp()
            return ended - decided, from_exit
        assert time.monotonic() - decided < WITHIN, f"still Running after {WITHIN}s: {running}"
        await asyncio.sleep(0.2)


def _vcjob_phase(cluster: TestCluster, base: str) -> str:
    job = client.CustomObjectsApi(cluster.api()).get_namespaced_custom_object(
        "batch.volcano.sh", "v1alpha1", NS, "jobs", base
    )
    return str(((job.get("status") or {}).get("state") or {}).get("phase"))


# -- volcano: the cluster alone ------------------------------------------------------------


async def test_volcano_chief_success_ends_the_job_with_no_jupyter_pai_running(
    kube_cluster: TestCluster, cli: Any
) -> None:
    job_id, base = cli.submit("volcano", CHIEF_WORKERS.format(name="chief"))
    took, from_exit = await _wait_decided_then_ended(kube_cluster, base, "chief", "Succeeded")
    print(
        f"volcano chief: no pod Running {took:.1f}s after Succeeded ({from_exit:.1f}s after exit)"
    )
    deadline = time.monotonic() + 10
    while _vcjob_phase(kube_cluster, base) != "Completed":
        assert time.monotonic() < deadline, _vcjob_phase(kube_cluster, base)
        await asyncio.sleep(0.2)
    shown = cli.show("volcano", job_id)
    assert shown["state"] == "SUCCEEDED", shown
    assert shown["subState"] == "1 of 1 chief instance(s) succeeded (minSucceededInstances=1)"
    assert shown["exitCode"] == 0
    assert {t["role"]: t["state"] for t in shown["tasks"] if t["role"] == "chief"} == {
        "chief": "SUCCEEDED"
    }
    assert all(t["state"] != "RUNNING" for t in shown["tasks"])


async def test_volcano_a_failed_worker_fails_the_job_with_no_jupyter_pai_running(
    kube_cluster: TestCluster, cli: Any
) -> None:
    job_id, base = cli.submit(
        "volcano", WORKER_FAILS.format(name="wfail", min_failed=1, fails="= 1")
    )
    took, from_exit = await _wait_decided_then_ended(kube_cluster, base, "worker", "Failed")
    print(f"volcano worker failed: no pod Running {took:.1f}s after Failed ({from_exit:.1f}s)")
    deadline = time.monotonic() + 10
    while _vcjob_phase(kube_cluster, base) != "Terminated":
        assert time.monotonic() < deadline, _vcjob_phase(kube_cluster, base)
        await asyncio.sleep(0.2)
    shown = cli.show("volcano", job_id)
    assert shown["state"] == "FAILED", shown
    assert shown["subState"] == "1 of 2 worker instance(s) failed (minFailedInstances=1)"
    assert shown["exitCode"] == 3


async def test_volcano_min_failed_above_one_is_ended_by_a_running_backend(
    kube_cluster: TestCluster, cli: Any
) -> None:
    """Volcano cannot count failures: with minFailedInstances 2 a backend ends the job (a
    TerminateJob command), here one nobody calls."""
    backend = make_backend(kube_cluster, "volcano")
    await backend.start()
    try:
        job_id, base = cli.submit(
            "volcano", WORKER_FAILS.format(name="wfail2", min_failed=2, fails="!= 9")
        )
        took, _ = await _wait_decided_then_ended(kube_cluster, base, "worker", "Failed")
        print(f"volcano minFailedInstances=2 via the backend: no pod Running {took:.1f}s after")
        detail = await backend.get_job(job_id)
        assert detail.state.value == "FAILED"
        assert detail.sub_state == "2 of 2 worker instance(s) failed (minFailedInstances=2)"
    finally:
        await backend.close()
    deadline = time.monotonic() + 10
    while _vcjob_phase(kube_cluster, base) != "Terminated":
        assert time.monotonic() < deadline, _vcjob_phase(kube_cluster, base)
        await asyncio.sleep(0.2)


# -- kueue: the cluster alone (JobSet's policies) --------------------------------------------


def _jobset_condition(cluster: TestCluster, base: str) -> str | None:
    js = client.CustomObjectsApi(cluster.api()).get_namespaced_custom_object(
        "jobset.x-k8s.io", "v1alpha2", NS, "jobsets", base
    )
    for cond in (js.get("status") or {}).get("conditions") or []:
        if cond["status"] == "True" and cond["type"] in ("Completed", "Failed"):
            return str(cond["type"])
    return None


async def _wait_jobset(cluster: TestCluster, base: str, condition: str) -> None:
    deadline = time.monotonic() + 10
    while _jobset_condition(cluster, base) != condition:
        assert time.monotonic() < deadline, _jobset_condition(cluster, base)
        await asyncio.sleep(0.2)


async def test_kueue_chief_success_ends_the_job_with_no_jupyter_pai_running(
    kube_cluster: TestCluster, cli: Any
) -> None:
    job_id, base = cli.submit("kueue", CHIEF_WORKERS.format(name="kchief"))
    took, from_exit = await _wait_decided_then_ended(kube_cluster, base, "chief", "Succeeded")
    print(f"kueue chief: no pod Running {took:.1f}s after Succeeded ({from_exit:.1f}s after exit)")
    await _wait_jobset(kube_cluster, base, "Completed")
    shown = cli.show("kueue", job_id)
    assert shown["state"] == "SUCCEEDED", shown
    assert shown["subState"] == "1 of 1 chief instance(s) succeeded (minSucceededInstances=1)"
    assert shown["exitCode"] == 0
    assert all(t["state"] != "RUNNING" for t in shown["tasks"])


@pytest.mark.parametrize(("min_failed", "fails"), [(1, "= 1"), (2, "!= 9")])
async def test_kueue_failed_workers_fail_the_job_with_no_jupyter_pai_running(
    kube_cluster: TestCluster, cli: Any, min_failed: int, fails: str
) -> None:
    """The worker Job's maxFailedIndexes (minFailedInstances - 1) fails it once that many
    indexes failed; a failed Job fails the JobSet (maxRestarts 0), which ends the rest."""
    job_id, base = cli.submit(
        "kueue", WORKER_FAILS.format(name=f"kfail{min_failed}", min_failed=min_failed, fails=fails)
    )
    took, _ = await _wait_decided_then_ended(kube_cluster, base, "worker", "Failed")
    print(f"kueue minFailedInstances={min_failed}: no pod Running {took:.1f}s after Failed")
    await _wait_jobset(kube_cluster, base, "Failed")
    shown = cli.show("kueue", job_id)
    assert shown["state"] == "FAILED", shown
    assert shown["subState"] == (
        f"{min_failed} of 2 worker instance(s) failed (minFailedInstances={min_failed})"
    )
    assert shown["exitCode"] == 3


FAILS_ONCE = """
protocolVersion: 2
name: {name}
type: job
jobRetryCount: 1
taskRoles:
  worker:
    instances: 2
    resourcePerInstance: {{cpu: 1, memoryMB: 128, gpu: 0}}
    commands:
      - 'if [ "$PAI_CURRENT_TASK_ROLE_CURRENT_TASK_INDEX" = 1 ] && mkdir {marker} 2>/dev/null; then exit 3; fi'
      - 'echo "attempt ok"'
"""


async def test_kueue_job_retry_restarts_the_jobset_with_no_jupyter_pai_running(
    kube_cluster: TestCluster, cli: Any, tmp_path: Path
) -> None:
    """jobRetryCount 1 is the JobSet's failurePolicy.maxRestarts: worker 1 fails the first
    attempt (its Job fails: maxFailedIndexes 0), JobSet recreates every Job, the second
    attempt succeeds."""
    marker = tmp_path / "failed-once"  # made by the first attempt, on this host
    job_id, base = cli.submit("kueue", FAILS_ONCE.format(name="kretry", marker=marker))
    deadline = time.monotonic() + 90
    while _jobset_condition(kube_cluster, base) is None:
        assert time.monotonic() < deadline, "the JobSet did not end"
        await asyncio.sleep(0.5)
    js = client.CustomObjectsApi(kube_cluster.api()).get_namespaced_custom_object(
        "jobset.x-k8s.io", "v1alpha2", NS, "jobsets", base
    )
    assert marker.is_dir()
    assert _jobset_condition(kube_cluster, base) == "Completed", js.get("status")
    assert js["status"]["restarts"] == 1
    shown = cli.show("kueue", job_id)
    assert shown["state"] == "SUCCEEDED", shown
    assert shown["retries"] == 1, shown


# -- native: a running backend's watch, and the CLI ----------------------------------------


async def test_native_chief_success_is_ended_by_a_backend_nobody_asks(
    kube_cluster: TestCluster, cli: Any
) -> None:
    backend = make_backend(kube_cluster, "native")
    await backend.start()
    try:
        job_id, base = cli.submit("native", CHIEF_WORKERS.format(name="nchief"))
        took, from_exit = await _wait_decided_then_ended(kube_cluster, base, "chief", "Succeeded")
        print(
            f"native chief (watching backend): no pod Running {took:.1f}s after Succeeded ({from_exit:.1f}s after exit)"
        )
        primary = client.CoreV1Api(kube_cluster.api()).read_namespaced_config_map(base, NS)
        outcome = json.loads(primary.metadata.annotations[ANN_OUTCOME])
        assert outcome["state"] == "SUCCEEDED"
        assert outcome["reason"] == "1 of 1 chief instance(s) succeeded (minSucceededInstances=1)"
    finally:
        await backend.close()
    shown = cli.show("native", job_id)
    assert shown["state"] == "SUCCEEDED" and shown["exitCode"] == 0, shown


async def test_native_min_failed_is_ended_by_a_backend_nobody_asks(
    kube_cluster: TestCluster, cli: Any
) -> None:
    backend = make_backend(kube_cluster, "native")
    await backend.start()
    try:
        job_id, base = cli.submit(
            "native", WORKER_FAILS.format(name="nfail", min_failed=1, fails="= 1")
        )
        took, _ = await _wait_decided_then_ended(kube_cluster, base, "worker", "Failed")
        print(f"native worker failed (watching backend): no pod Running {took:.1f}s after")
    finally:
        await backend.close()
    shown = cli.show("native", job_id)
    assert shown["state"] == "FAILED", shown
    assert shown["subState"] == "1 of 2 worker instance(s) failed (minFailedInstances=1)"
    assert shown["exitCode"] == 3


async def test_native_submit_wait_finishes_the_ending_it_starts(
    kube_cluster: TestCluster, cli: Any
) -> None:
    """No server: ``submit --wait`` sees the chief decide, and before it exits the outcome
    is recorded and every batch Job suspended; nothing is left Running soon after."""
    job_id, base = cli.submit("native", CHIEF_WORKERS.format(name="nwait"), "--wait")
    assert job_id == "alice~nwait"
    primary = client.CoreV1Api(kube_cluster.api()).read_namespaced_config_map(base, NS)
    assert json.loads(primary.metadata.annotations[ANN_OUTCOME])["state"] == "SUCCEEDED"
    batch = client.BatchV1Api(kube_cluster.api())
    jobs = batch.list_namespaced_job(NS, label_selector=f"{OWNED},{LABEL_JOB}={base}").items
    assert len(jobs) == 2 and all(j.spec.suspend for j in jobs)
    deadline = time.monotonic() + WITHIN
    while running := [p for p in _pods(kube_cluster, base) if p.status.phase == "Running"]:
        assert time.monotonic() < deadline, [p.metadata.name for p in running]
        await asyncio.sleep(0.2)
