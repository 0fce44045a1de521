"""The environment contract (pure): what every task of the TensorFlow ps/worker example sees,
pinned in a golden file (``UPDATE_GOLDEN=1`` rewrites it), plus the rules behind it: the
``ssh`` and ``http`` ports every task gets, host lists on ``http``, OpenPAI's shm figure."""

from __future__ import annotations

from typing import Any

from jupyter_pai.backends.envcontract import (
    Placement,
    job_environment,
    parse_port_list,
    port_requests,
    task_environment,
    task_keys,
)
from jupyter_pai.spec import JobProtocol, parse_job
from tests.spec_corpus import EXAMPLES, golden, normalized

TF = parse_job((EXAMPLES / "tensorflow-ps-worker.yaml").read_text()).job


def job_of(roles: dict[str, Any], **extra: Any) -> JobProtocol:
    return parse_job(
        {"protocolVersion": 2, "name": "n", "type": "job", "taskRoles": roles, **extra}
    ).job


def numbered_placements(job: JobProtocol, host: str = "tf-{role}-{index}.tf-ps-worker") -> dict:
    """Each task on its own host, its ports numbered from 20000 in request order."""
    placements = {}
    nxt = 20000
    for role, index in task_keys(job):
        ports = {}
        for label, count in port_requests(job, role).items():
            ports[label] = list(range(nxt, nxt + count))
            nxt += count
        placements[(role, index)] = Placement(host.format(role=role, index=index), ports)
    return placements


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
    shared, tasks = environments(TF, numbered_placements(TF))
    own = {key: {k: v for k, v in env.items() if shared.get(k) != v} for key, env in tasks.items()}
    data = {"job": shared, "tasks": own}
    assert normalized(data) == golden("envcontract.tensorflow-ps-worker.json", data)


def test_every_task_gets_the_shared_variables() -> None:
    shared, tasks = environments(TF, numbered_placements(TF))
    for env in tasks.values():
        assert shared.items() <= env.items()


def test_tensorflow_hosts_ranks_and_master() -> None:
    shared, tasks = environments(TF, numbered_placements(TF))
    # worker-0 holds grpc 20000, ssh 20001, http 20002; worker-1 20003..20005; ps-0 20006..
    assert (
        shared["PAI_TASK_ROLE_worker_HOST_LIST"]
        == "tf-worker-0.tf-ps-worker:20002,tf-worker-1.tf-ps-worker:20005"
    )
    assert shared["PAI_TASK_ROLE_ps_HOST_LIST"] == "tf-ps-0.tf-ps-worker:20008"
    assert shared["PAI_TASK_ROLE_LIST"] == "worker,ps"
    assert shared["PAI_PORT_LIST_worker_1_grpc"] == "20003"
    assert shared["PAI_worker_1_http_PORT"] == "20005"
    assert shared["PAI_RESOURCE_worker"] == "2,4,16384,0"
    assert shared["PAI_MIN_SUCCEEDED_TASK_COUNT_ps"] == "-1"
    assert shared["PAI_MIN_SUCCEEDED_TASK_COUNT_worker"] == "2"
    assert shared["PAI_FRAMEWORK_NAME"] == shared["PAI_JOB_NAME"] == "alice~tf_ps_worker"
    assert shared["PAI_TASKS_NUM"] == "3" and shared["PAI_TASK_ROLES_NUM"] == "2"
    # Ranks follow the roles as written (worker first here), then the index.
    assert [tasks[k]["RANK"] for k in ("worker-0", "worker-1", "ps-0")] == ["0", "1", "2"]
    assert shared["WORLD_SIZE"] == "3"
    assert (shared["MASTER_ADDR"], shared["MASTER_PORT"]) == ("tf-worker-0.tf-ps-worker", "29500")
    ps = tasks["ps-0"]
    assert ps["PAI_CURRENT_TASK_ROLE_NAME"] == "ps"
    assert ps["PAI_CURRENT_CONTAINER_IP"] == ps["PAI_CONTAINER_HOST_IP"] == "tf-ps-0.tf-ps-worker"
    assert ps["PAI_CURRENT_CONTAINER_PORT"] == ps["PAI_CONTAINER_HOST_PORT"] == "20008"
    assert ps["PAI_CONTAINER_SSH_PORT"] == "20007"
    assert ps["PAI_CONTAINER_HOST_grpc_PORT_LIST"] == "20006"
    assert ps["PAI_CONTAINER_HOST_PORT_LIST"] == "grpc:20006;ssh:20007;http:20008;"
    assert tasks["worker-1"]["PAI_CURRENT_TASK_ROLE_CURRENT_TASK_INDEX"] == "1"


def test_every_task_gets_ssh_and_http_after_the_declared_ports() -> None:
    job = job_of(
        {
            "a": {"instances": 2, "commands": ["true"]},
            "b": {"commands": ["true"], "resourcePerInstance": {"ports": {"x": 2, "unused": 0}}},
            "c": {"commands": ["true"], "resourcePerInstance": {"ports": {"http": 3, "y": 1}}},
            "d": {"commands": ["true"], "resourcePerInstance": {"ports": {"ssh": 0}}},
        }
    )
    assert list(port_requests(job, "a").items()) == [("ssh", 1), ("http", 1)]
    assert list(port_requests(job, "b").items()) == [("x", 2), ("ssh", 1), ("http", 1)]
    assert list(port_requests(job, "c").items()) == [("http", 3), ("y", 1), ("ssh", 1)]
    # Declared with count 0: OpenPAI keeps the user's 0 and adds no port of that label.
    assert list(port_requests(job, "d").items()) == [("http", 1)]


def test_tensorboard_declares_a_port_on_the_first_role() -> None:
    job = job_of(
        {
            "chief": {"commands": ["true"], "resourcePerInstance": {"ports": {"x": 1}}},
            "worker": {"commands": ["true"]},
        },
        extras={
            "com.microsoft.pai.runtimeplugin": [
                {"plugin": "tensorboard", "parameters": {"port": 6006, "logdir": {"l": "/l"}}}
            ]
        },
    )
    assert list(port_requests(job, "chief")) == ["x", "tensorboard", "ssh", "http"]
    assert list(port_requests(job, "worker")) == ["ssh", "http"]
    _, tasks = environments(job, numbered_placements(job))
    assert tasks["chief-0"]["PAI_CONTAINER_HOST_tensorboard_PORT_LIST"] == "20001"
    assert tasks["chief-0"]["PAI_CONTAINER_HOST_PORT_LIST"] == (
        "x:20000;tensorboard:20001;ssh:20002;http:20003;"
    )


def test_shm_is_what_the_job_wrote_else_zero_as_in_openpai() -> None:
    job = job_of(
        {
            "a": {"commands": ["true"], "extraContainerOptions": {"shmMB": 2048}},
            "b": {"commands": ["true"], "extraContainerOptions": {"infiniband": False}},
            "c": {"commands": ["true"], "resourcePerInstance": {"cpu": 1.5, "gpu": 1}},
        }
    )
    shared, _ = environments(job, numbered_placements(job))
    assert shared["PAI_RESOURCE_a"] == "0,1,1024,2048"
    assert shared["PAI_RESOURCE_b"] == "0,1,1024,0"
    assert shared["PAI_RESOURCE_c"] == "1,1.5,1024,0"
    # The model still has the real /dev/shm size for the backends.
    assert job.task_roles["b"].extra_container_options.shm_mb == 512


def test_a_task_without_an_http_port_is_listed_by_host_alone() -> None:
    job = job_of({"a": {"instances": 2, "commands": ["true"]}})
    placements = {
        ("a", 0): Placement("h0", {"ssh": [7000]}),
        ("a", 1): Placement("h1", {"ssh": [7001], "http": [7002, 7003]}),
    }
    shared, tasks = environments(job, placements)
    assert shared["PAI_TASK_ROLE_a_HOST_LIST"] == "h0,h1:7002"
    assert "PAI_CURRENT_CONTAINER_PORT" not in tasks["a-0"]
    assert tasks["a-0"]["PAI_CONTAINER_SSH_PORT"] == "7000"
    assert tasks["a-1"]["PAI_CURRENT_CONTAINER_PORT"] == "7002"
    assert shared["PAI_PORT_LIST_a_1_http"] == "7002,7003"
    assert tasks["a-1"]["PAI_CONTAINER_HOST_PORT_LIST"] == "ssh:7001;http:7002,7003;"
    assert tasks["a-1"]["LOCAL_RANK"] == "0" and tasks["a-1"]["GROUP_RANK"] == "1"


def test_the_port_list_reads_back() -> None:
    ports = {"tb": [29004, 25454], "ssh": [24446], "http": [39939]}
    text = task_environment(
        job_of({"a": {"commands": ["true"]}}),
        {},
        role="a",
        index=0,
        placements={("a", 0): Placement("h", ports)},
    )["PAI_CONTAINER_HOST_PORT_LIST"]
    assert text == "tb:29004,25454;ssh:24446;http:39939;"  # OpenPAI's own example
    assert parse_port_list(text) == ports
    assert parse_port_list("") == {}
