"""The environment contract (pure): what every task of the TensorFlow ps/worker example sees,
pinned in a golden file (``UPDATE_GOLDEN=1`` rewrites it), plus the rules behind it."""

from __future__ import annotations

from jupyter_pai.backends.envcontract import (
    DEFAULT_PORT_LABEL,
    Placement,
    job_environment,
    port_requests,
    task_environment,
    task_keys,
)
from jupyter_pai.spec import JobProtocol, parse_job
from tests.spec_corpus import EXAMPLES, golden, normalized

TF = parse_job((EXAMPLES / "tensorflow-ps-worker.yaml").read_text()).job
PLACEMENTS = {
    ("worker", 0): Placement("tf-worker-0.tf-ps-worker", {"grpc": [20000]}),
    ("worker", 1): Placement("tf-worker-1.tf-ps-worker", {"grpc": [20001]}),
    ("ps", 0): Placement("tf-ps-0.tf-ps-worker", {"grpc": [20002]}),
}


def environments(
    job: JobProtocol, placements: dict
) -> tuple[dict[str, str], dict[str, dict[str, str]]]:
    shared = job_environment(
        job,
        job_id="alice~tf_ps_worker",
        user="alice",
        virtual_cluster="research",
        placements=placements,
        master_port=29500,
    )
    tasks = {
        f"{role}-{index}": task_environment(
            job, shared, role=role, index=index, placements=placements
        )
        for role, index in task_keys(job)
    }
    return shared, tasks


def test_tensorflow_ps_worker_environment_golden() -> None:
    shared, tasks = environments(TF, PLACEMENTS)
    own = {key: {k: v for k, v in env.items() if shared.get(k) != v} for key, env in tasks.items()}
    data = {"job": shared, "tasks": own}
    assert normalized(data) == golden("envcontract.tensorflow-ps-worker.json", data)


def test_every_task_gets_the_shared_variables() -> None:
    shared, tasks = environments(TF, PLACEMENTS)
    for env in tasks.values():
        assert shared.items() <= env.items()


def test_tensorflow_hosts_ranks_and_master() -> None:
    shared, tasks = environments(TF, PLACEMENTS)
    assert shared["PAI_TASK_ROLE_worker_HOST_LIST"] == (
        "tf-worker-0.tf-ps-worker:20000,tf-worker-1.tf-ps-worker:20001"
    )
    assert shared["PAI_TASK_ROLE_ps_HOST_LIST"] == "tf-ps-0.tf-ps-worker:20002"
    assert shared["PAI_TASK_ROLE_LIST"] == "worker,ps"
    assert shared["PAI_PORT_LIST_worker_1_grpc"] == "20001"
    assert shared["PAI_RESOURCE_worker"] == "2,4,16384,512"
    assert shared["PAI_MIN_SUCCEEDED_TASK_COUNT_ps"] == "-1"
    assert shared["PAI_MIN_SUCCEEDED_TASK_COUNT_worker"] == "2"
    # Ranks follow the roles as written (worker first here), then the index.
    assert [tasks[k]["RANK"] for k in ("worker-0", "worker-1", "ps-0")] == ["0", "1", "2"]
    assert shared["WORLD_SIZE"] == "3"
    assert (shared["MASTER_ADDR"], shared["MASTER_PORT"]) == ("tf-worker-0.tf-ps-worker", "29500")
    ps = tasks["ps-0"]
    assert ps["PAI_CURRENT_TASK_ROLE_NAME"] == "ps"
    assert ps["PAI_CURRENT_CONTAINER_IP"] == "tf-ps-0.tf-ps-worker"
    assert ps["PAI_CURRENT_CONTAINER_PORT"] == "20002"
    assert ps["PAI_CONTAINER_HOST_grpc_PORT_LIST"] == "20002"
    assert tasks["worker-1"]["PAI_CURRENT_TASK_ROLE_CURRENT_TASK_INDEX"] == "1"


def test_roles_without_ports_get_a_default_port() -> None:
    job = parse_job(
        {
            "protocolVersion": 2,
            "name": "n",
            "type": "job",
            "taskRoles": {
                "a": {"instances": 2, "commands": ["true"]},
                "b": {
                    "commands": ["true"],
                    "resourcePerInstance": {"ports": {"http": 2, "unused": 0}},
                },
            },
        }
    ).job
    assert port_requests(job, "a") == {DEFAULT_PORT_LABEL: 1}
    assert port_requests(job, "b") == {"http": 2}


def test_a_task_without_ports_is_listed_by_host_alone() -> None:
    job = parse_job(
        {
            "protocolVersion": 2,
            "name": "n",
            "type": "job",
            "taskRoles": {"a": {"instances": 2, "commands": ["true"]}},
        }
    ).job
    placements = {("a", 0): Placement("h0"), ("a", 1): Placement("h1", {"default": [7000, 7001]})}
    shared, tasks = environments(job, placements)
    assert shared["PAI_TASK_ROLE_a_HOST_LIST"] == "h0,h1:7000"
    assert "PAI_CURRENT_CONTAINER_PORT" not in tasks["a-0"]
    assert tasks["a-1"]["PAI_CURRENT_CONTAINER_PORT"] == "7000"
    assert shared["PAI_PORT_LIST_a_1_default"] == "7000,7001"
    assert tasks["a-1"]["LOCAL_RANK"] == "0" and tasks["a-1"]["GROUP_RANK"] == "1"
