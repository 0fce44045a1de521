"""Kubernetes builders: golden manifests per example and flavor, and the properties that
matter whatever the golden files say (names, gang, secrets, the environment contract).

``UPDATE_GOLDEN=1 pytest tests/unit/test_kube_builders.py`` rewrites the golden files."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from jupyter_pai.backends.completion_policy import Decision
from jupyter_pai.backends.kubernetes.flavors import FLAVORS, Built, Flavor, HivedSettings
from jupyter_pai.backends.kubernetes.flavors.volcano import completion_plan
from jupyter_pai.backends.kubernetes.naming import ANN_SPEC, make_names, slug
from jupyter_pai.backends.kubernetes.pods import PodOptions
from jupyter_pai.backends.models import JobState
from jupyter_pai.spec import parse_job
from jupyter_pai.spec.protocol import JobProtocol
from tests.cluster.podenv import container_argv, container_env
from tests.golden import check_golden
from tests.spec_corpus import example_files

GOLDEN = Path(__file__).parent / "golden" / "kube"
OPTIONS = PodOptions(namespace="alice", node_selector={"pool": "gpu"})
DNS_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")


def _job(text: str) -> JobProtocol:
    return parse_job(text).job


def _example(path: Path) -> JobProtocol:
    return parse_job(path.read_text(), name=path.stem.replace("-", "_")).job


def _build(flavor: str, job: JobProtocol, user: str = "alice") -> Built:
    # hived: with a CPU SKU, as the test cluster's HiveD has, so tasks without GPUs build.
    settings = HivedSettings(cpu_sku="CPU") if flavor == "hived" else None
    return FLAVORS[flavor](OPTIONS, settings).build(job, make_names(job, user))


@pytest.mark.parametrize("flavor", sorted(FLAVORS))
@pytest.mark.parametrize("path", example_files(), ids=lambda p: p.stem)
def test_golden_manifests(path: Path, flavor: str) -> None:
    built = _build(flavor, _example(path))
    got = {"primary": built.primary, "objects": built.objects}
    text = json.dumps(got, indent=1, sort_keys=True) + "\n"
    check_golden(GOLDEN / f"{path.stem}.{flavor}.json", text, json.loads)


TWO_ROLES = """
protocolVersion: 2
name: Train_2roles
type: job
secrets: {token: hunter2-secret}
prerequisites: [{type: dockerimage, name: img, uri: 'python:3.11'}]
defaults: {virtualCluster: research}
jobRetryCount: 2
taskRoles:
  ps:
    instances: 1
    dockerImage: img
    completion: {minSucceededInstances: -1}
    resourcePerInstance: {cpu: 1, memoryMB: 512, gpu: 0}
    commands: ['echo ps']
  worker:
    instances: 3
    taskRetryCount: 1
    dockerImage: img
    extraContainerOptions: {shmMB: 256}
    resourcePerInstance: {cpu: 2, memoryMB: 2048, gpu: 1, ports: {http: 2}}
    commands:
      - 'echo "rank=$RANK index=$PAI_CURRENT_TASK_ROLE_CURRENT_TASK_INDEX tok=<% $secrets.token %>"'
      - 'echo "world=$WORLD_SIZE ps=$PAI_TASK_ROLE_ps_HOST_LIST ip=$PAI_CURRENT_CONTAINER_IP"'
      - 'echo "sub=$(echo sub-shell) task=$PAI_TASK_INDEX http=$PAI_PORT_LIST_worker_0_http"'
extras:
  storages: [{name: team-data, mountPath: /data, readOnly: true}]
"""


@pytest.mark.parametrize("flavor", sorted(FLAVORS))
def test_secret_values_never_in_manifests(flavor: str) -> None:
    built = _build(flavor, _job(TWO_ROLES))
    secrets = [o for o in built.objects if o["kind"] == "Secret"]
    others = [o for o in built.objects if o["kind"] != "Secret"]
    assert len(secrets) == 1 and secrets[0]["stringData"] == {"PAI_SECRET_token": "hunter2-secret"}
    assert "hunter2-secret" not in json.dumps(others)
    assert "******" in built.primary_object["metadata"]["annotations"][ANN_SPEC]


def test_volcano_sets_what_the_webhook_would_default() -> None:
    built = _build("volcano", _job(TWO_ROLES))
    vcjob = built.primary_object
    assert vcjob["kind"] == "Job" and vcjob["apiVersion"] == "batch.volcano.sh/v1alpha1"
    spec = vcjob["spec"]
    assert spec["schedulerName"] == "volcano"
    assert spec["queue"] == "research"
    assert spec["minAvailable"] == 4  # gang: every instance of every role
    assert spec["maxRetry"] == 2  # jobRetryCount
    assert [t["name"] for t in spec["tasks"]] == ["ps", "worker"]
    assert [(t["replicas"], t["minAvailable"], t["maxRetry"]) for t in spec["tasks"]] == [
        (1, 1, 0),
        (3, 3, 2),  # taskRetryCount 1: TaskFailed at the second restart
    ]
    # taskRetryCount: the container restarts in place (the pod and its previous log stay).
    assert [t["template"]["spec"]["restartPolicy"] for t in spec["tasks"]] == ["Never", "OnFailure"]
    assert all(t["template"]["spec"]["schedulerName"] == "volcano" for t in spec["tasks"])
    ps, worker = spec["tasks"]
    assert {"event": "PodFailed", "action": "RestartJob"} in ps["policies"]
    assert {"event": "TaskFailed", "action": "RestartJob"} in worker["policies"]
    assert not any(p["action"] == "RestartPod" for p in worker["policies"])
    assert {"event": "TaskCompleted", "action": "CompleteJob"} in worker["policies"]
    assert not any(p["event"] == "TaskCompleted" for p in ps["policies"])  # -1: never decides
    assert {"event": "PodEvicted", "action": "RestartJob"} in spec["policies"]


def test_volcano_without_gang_and_without_retries() -> None:
    text = TWO_ROLES.replace("jobRetryCount: 2", "jobRetryCount: 0") + "  gangAllocation: false\n"
    spec = _build("volcano", _job(text)).primary_object["spec"]
    # No retry of the job: failures terminate it, preemptions restart it however often.
    assert spec["minAvailable"] == 1 and spec["maxRetry"] == 2**31 - 1
    assert [t["minAvailable"] for t in spec["tasks"]] == [1, 1]
    assert {"event": "PodFailed", "action": "TerminateJob"} in spec["tasks"][0]["policies"]


def test_names_are_dns_safe_and_distinct() -> None:
    a = make_names(_job(TWO_ROLES.replace("Train_2roles", "a_b")), "Alice.Smith")
    b = make_names(_job(TWO_ROLES.replace("Train_2roles", "a-b")), "Alice.Smith")
    long = make_names(_job(TWO_ROLES.replace("Train_2roles", "x" * 200)), "u" * 80)
    assert a.base != b.base
    for names in (a, b, long):
        assert DNS_LABEL.match(names.base) and len(names.base) <= 30
        for role in names.roles:
            host = names.pod_host(role, 999)
            assert DNS_LABEL.match(host) and len(host) <= 63
    assert slug("9lives") == "x-9lives" and slug("__") == "x"


def test_roles_that_differ_only_in_case_get_distinct_names() -> None:
    text = TWO_ROLES.replace("  ps:\n", "  PS:\n").replace(
        "$PAI_TASK_ROLE_ps_", "$PAI_TASK_ROLE_PS_"
    )
    text = text.replace("  worker:\n", "  ps:\n").replace("_worker_0_", "_ps_0_")
    names = make_names(_job(text), "alice")
    assert len(set(names.roles.values())) == 2
    assert all(DNS_LABEL.match(r) for r in names.roles.values())


def test_storages_and_shared_memory() -> None:
    built = _build("volcano", _job(TWO_ROLES))
    worker = built.primary_object["spec"]["tasks"][1]["template"]["spec"]
    vols = {v["name"]: v for v in worker["volumes"]}
    assert vols["dshm"]["emptyDir"] == {"medium": "Memory", "sizeLimit": "256Mi"}
    assert vols["storage-0"]["persistentVolumeClaim"] == {
        "claimName": "team-data",
        "readOnly": True,
    }
    mounts = {m["mountPath"]: m for m in worker["containers"][0]["volumeMounts"]}
    assert mounts["/data"]["readOnly"] is True and "/dev/shm" in mounts
    res = worker["containers"][0]["resources"]
    assert res["requests"] == {"cpu": "2", "memory": "2048Mi", "nvidia.com/gpu": "1"}
    assert res["limits"]["nvidia.com/gpu"] == "1"


def _resolved_env(
    flavor: Flavor, template: dict[str, Any], index: int
) -> tuple[dict[str, str], list[str]]:
    """The env and argv a kubelet would give this instance (the test runner's resolver)."""
    annotations = dict(template["metadata"]["annotations"])
    if flavor.index_annotation:
        annotations[flavor.index_annotation] = str(index)
    pod = {
        "metadata": {"name": f"p{index}", "namespace": "alice", "annotations": annotations},
        "spec": template["spec"],
        "status": {"podIP": f"10.0.0.{index + 1}"},
    }
    secrets = {"PAI_SECRET_token": "hunter2-secret"}
    container = template["spec"]["containers"][0]
    env = container_env(pod, container, lambda kind, ns, name: secrets)
    return env, container_argv(container, env)


@pytest.mark.parametrize("flavor_name", ["volcano", "native", "kueue"])
def test_per_role_template_gives_each_instance_its_contract(flavor_name: str) -> None:
    job = _job(TWO_ROLES)
    flavor = FLAVORS[flavor_name](OPTIONS)
    built = flavor.build(job, make_names(job, "alice"))
    names = make_names(job, "alice")
    templates = _role_templates(built)
    env, argv = _resolved_env(flavor, templates["worker"], 2)
    out = subprocess.run(argv, env=env, capture_output=True, text=True, check=True).stdout
    ps_host = flavor.peer_host(names, "ps", 0)
    assert "rank=3 index=2 tok=hunter2-secret" in out  # ps is rank 0, worker 2 rank 3
    # Host lists use each task's http port: ps declares none, so it gets ssh 30000, http 30001.
    assert f"world=4 ps={ps_host}:30001 ip=10.0.0.3" in out
    assert "sub=sub-shell task=2 http=30000,30001" in out
    assert env["PAI_CONTAINER_HOST_IP"] == "10.0.0.3"
    assert env["PAI_CONTAINER_SSH_PORT"] == "30002" and env["PAI_CONTAINER_HOST_PORT"] == "30000"
    assert env["PAI_CONTAINER_HOST_PORT_LIST"] == "http:30000,30001;ssh:30002;"
    assert env["PAI_RESOURCE_worker"] == "1,2,2048,256" and env["PAI_RESOURCE_ps"] == "0,1,512,0"
    assert env["MASTER_ADDR"] == ps_host and env["MASTER_PORT"] == "29500"
    assert env["PAI_TASK_ROLE_worker_HOST_LIST"] == ",".join(
        f"{flavor.peer_host(names, 'worker', i)}:30000" for i in range(3)
    )
    assert env["PAI_USER_NAME"] == "alice" and env["PAI_JOB_NAME"] == "alice~Train_2roles"
    assert env["PAI_VIRTUAL_CLUSTER"] == "research"


def _role_templates(built: Built) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for obj in built.objects:
        if obj["kind"] == "Job" and obj["apiVersion"] == "batch/v1":
            out[obj["metadata"]["labels"]["jupyter-pai.io/role"]] = obj["spec"]["template"]
        elif obj["kind"] == "Job":
            for task in obj["spec"]["tasks"]:
                out[task["name"]] = task["template"]
        elif obj["kind"] == "JobSet":
            for rj in obj["spec"]["replicatedJobs"]:
                out[rj["name"]] = rj["template"]["spec"]["template"]
    return out


def test_peer_hosts_match_the_pod_names_the_controllers_give() -> None:
    job = _job(TWO_ROLES)
    names = make_names(job, "alice")
    # Volcano names pods <job>-<task>-<index> and (svc plugin) uses them as host names.
    vcjob = _build("volcano", job).primary_object
    assert FLAVORS["volcano"](OPTIONS).peer_host(names, "worker", 1) == (
        f"{vcjob['metadata']['name']}-{vcjob['spec']['tasks'][1]['name']}-1.{names.service}"
    )
    # Indexed Jobs name pods' hosts <job>-<index>.
    native = _build("native", job)
    batch = [o for o in native.objects if o.get("apiVersion") == "batch/v1"]
    assert FLAVORS["native"](OPTIONS).peer_host(names, "worker", 1) == (
        f"{batch[1]['metadata']['name']}-1.{batch[1]['spec']['template']['spec']['subdomain']}"
    )


def test_hived_pods_carry_the_scheduling_spec() -> None:
    import yaml

    text = (
        TWO_ROLES
        + "  hivedScheduler: {jobPriorityClass: prod, taskRoles: {worker: {skuType: A100}}}\n"
    )
    built = _build("hived", _job(text))
    pods = [o for o in built.objects if o["kind"] == "Pod"]
    assert len(pods) == 4
    worker = next(p for p in pods if p["metadata"]["labels"]["jupyter-pai.io/role"] == "worker")
    spec = yaml.safe_load(
        worker["metadata"]["annotations"]["hivedscheduler.microsoft.com/pod-scheduling-spec"]
    )
    assert spec["virtualCluster"] == "research" and spec["priority"] == 100
    assert spec["leafCellType"] == "A100" and spec["leafCellNumber"] == 1
    # The gang's task without GPUs asks CPU cells, in a group of its own (one SKU each).
    assert spec["affinityGroup"]["members"] == [{"podNumber": 3, "leafCellNumber": 1}]
    ps = next(p for p in pods if p["metadata"]["labels"]["jupyter-pai.io/role"] == "ps")
    ps_spec = yaml.safe_load(
        ps["metadata"]["annotations"]["hivedscheduler.microsoft.com/pod-scheduling-spec"]
    )
    assert (ps_spec["leafCellType"], ps_spec["leafCellNumber"]) == ("CPU", 1)
    assert ps_spec["affinityGroup"]["name"].endswith("/default-cpu")
    assert {"name": "NVIDIA_VISIBLE_DEVICES", "value": "void"} in ps["spec"]["containers"][0]["env"]
    assert worker["spec"]["schedulerName"] == "hivedscheduler"
    assert worker["spec"]["priorityClassName"] == "pai-prod"
    limits = worker["spec"]["containers"][0]["resources"]["limits"]
    assert limits["hivedscheduler.microsoft.com/pod-scheduling-enable"] == "1"
    assert "nvidia.com/gpu" not in limits


def test_kueue_jobset_is_suspended_and_queued() -> None:
    jobset = _build("kueue", _job(TWO_ROLES)).primary_object
    assert jobset["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "research"
    assert jobset["spec"]["suspend"] is True
    assert jobset["spec"]["failurePolicy"] == {"maxRestarts": 2}
    assert jobset["spec"]["successPolicy"]["targetReplicatedJobs"] == ["worker"]


def test_native_gang_pod_group_counts_every_instance() -> None:
    built = _build("native", _job(TWO_ROLES))
    group = next(o for o in built.objects if o["kind"] == "PodGroup")
    assert group["spec"]["schedulingPolicy"]["gang"]["minCount"] == 4
    jobs = [o for o in built.objects if o["kind"] == "Job"]
    for job in jobs:
        pod = job["spec"]["template"]["spec"]
        assert pod["schedulingGroup"] == {"podGroupName": group["metadata"]["name"]}
        assert pod["priorityClassName"] == "vc-research"
    assert [j["spec"]["backoffLimitPerIndex"] for j in jobs] == [0, 1]


# -- OpenPAI's completion policy as Volcano lifecycle policies ------------------------------

COMPLETION_CASES = {
    "chief-and-workers": """
      chief: {instances: 1, completion: {minSucceededInstances: 1}}
      worker: {instances: 2}""",
    "ps-never-succeeds": """
      ps: {instances: 1, completion: {minSucceededInstances: -1, minFailedInstances: -1}}
      worker: {instances: 3, completion: {minSucceededInstances: -1}}""",
    "one-role-min-succeeded": """
      worker: {instances: 4, completion: {minSucceededInstances: 2}}""",
    "two-roles-min-succeeded": """
      chief: {instances: 1}
      worker: {instances: 4, completion: {minSucceededInstances: 2, minFailedInstances: 2}}""",
    "retries": """
      worker: {instances: 2, taskRetryCount: 2}""",
}


def _completion_job(roles: str, job_retries: int = 0) -> JobProtocol:
    body = "\n".join(
        line.rstrip()[:-1] + ", commands: [run]}" if line.strip() else line
        for line in roles.splitlines()
    )
    return _job(
        f"protocolVersion: 2\nname: c\ntype: job\njobRetryCount: {job_retries}\ntaskRoles:{body}\n"
    )


def test_volcano_completion_policies_golden() -> None:
    """What the vcjob says per case (task policies, minSuccess) and which decisions Volcano
    then enforces without jupyter-pai; the golden file is the table to review."""
    got = {}
    for name, roles in COMPLETION_CASES.items():
        for retries in (0, 1):
            job = _completion_job(roles, retries)
            vcjob = _build("volcano", job).primary_object
            plan = completion_plan(job)
            got[f"{name}.jobRetryCount={retries}"] = {
                "policies": {t["name"]: t["policies"] for t in vcjob["spec"]["tasks"]},
                "minSuccess": vcjob["spec"].get("minSuccess"),
                "enforcedByVolcano": sorted(f"{r}:{rule}" for r, rule in plan.enforced),
            }
    text = json.dumps(got, indent=1, sort_keys=True) + "\n"
    check_golden(GOLDEN / "completion-policies.volcano.json", text, json.loads)


@pytest.mark.parametrize(
    ("case", "role", "rule", "volcano"),
    [
        ("chief-and-workers", "chief", "succeeded", True),  # TaskCompleted → CompleteJob
        ("chief-and-workers", "worker", "failed", True),  # PodFailed → TerminateJob
        ("one-role-min-succeeded", "worker", "succeeded", True),  # minSuccess
        ("two-roles-min-succeeded", "worker", "succeeded", False),  # minSuccess counts all
        ("two-roles-min-succeeded", "worker", "failed", False),  # no count of failures
        ("two-roles-min-succeeded", "chief", "succeeded", True),
    ],
)
def test_who_ends_a_decided_job(case: str, role: str, rule: str, volcano: bool) -> None:
    job = _completion_job(COMPLETION_CASES[case])
    state = JobState.SUCCEEDED if rule == "succeeded" else JobState.FAILED
    decision = Decision(state, "why", 0, rule=rule, role=role)
    assert FLAVORS["volcano"](OPTIONS).ends_itself(job, decision) is volcano
    assert FLAVORS["native"](OPTIONS).ends_itself(job, decision) is False
    names = make_names(job, "alice")
    primary = {"metadata": {"name": names.base, "uid": "u1"}}
    (step,) = FLAVORS["volcano"](OPTIONS).ending_steps(primary, names, decision)
    assert step.body["action"] == ("CompleteJob" if rule == "succeeded" else "TerminateJob")
    assert step.body["message"] == "why"
    native = FLAVORS["native"](OPTIONS).ending_steps(primary, names, decision)
    assert [s.op for s in native] == ["patch"] * len(job.task_roles)  # finished pods stay
