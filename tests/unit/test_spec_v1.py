"""OpenPAI v1 JSON jobs converted to protocol v2: the converted document, the rendered
commands of each role and the warnings are pinned per input (golden ``v1/<name>.json``);
what cannot be carried over is an error naming the v1 field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from jupyter_pai.backends.envcontract import Placement, job_environment, port_requests, task_keys
from jupyter_pai.errors import SpecError
from jupyter_pai.spec import parse_job, task_commands
from tests.spec_corpus import HERE, golden, normalized

INPUTS = sorted((HERE / "unit" / "specs_v1").glob("*.json"))


@pytest.mark.parametrize("path", INPUTS, ids=lambda p: p.stem)
def test_conversion_golden(path: Path) -> None:
    parsed = parse_job(path.read_text())
    job = parsed.job
    assert parsed.format == "v1"
    assert parsed.warnings[0].message.startswith("converted from an OpenPAI v1 job")
    data = {
        "converted": parsed.document,
        "commands": {role: task_commands(job, role) for role in job.role_names},
        "warnings": [str(w) for w in parsed.warnings],
    }
    assert normalized(data) == golden(f"v1/{path.stem}.json", data)


def test_ps_worker_fields_and_variables() -> None:
    job = parse_job((HERE / "unit" / "specs_v1" / "ps-worker.json").read_text()).job
    assert job.name == "tf-distributed" and job.virtual_cluster == "research"
    assert job.job_retry_count == 2
    worker, ps = job.task_roles["worker"], job.task_roles["ps"]
    assert (worker.instances, worker.resource_per_instance.gpu, worker.min_succeeded) == (4, 2, 4)
    assert worker.extra_container_options.shm_mb == 2048
    assert ps.extra_container_options.shm_mb == 64  # v1's default, not v2's 512
    # v1's null: the job succeeds when every ps task has finished, i.e. v2's -1.
    assert (ps.min_failed, ps.min_succeeded) == (1, -1)
    lines = task_commands(job, "worker")
    assert lines[:3] == [
        'export PAI_DATA_DIR="$PAI_DEFAULT_FS_URI/$PAI_USERNAME/cifar/data"',
        'export PAI_OUTPUT_DIR="$PAI_DEFAULT_FS_URI/$PAI_USERNAME/cifar/output"',
        'export PAI_CODE_DIR="$PAI_DEFAULT_FS_URI/$PAI_USERNAME/cifar/code"',
    ]
    assert "export note='two words; $HOME'" in lines
    assert "export debug=true" in lines and "export lr=0.5" in lines
    # The task environment of a converted job is the v2 contract (host lists and all).
    places = {
        key: Placement(
            f"h-{key[0]}-{key[1]}", {label: [1000] for label in port_requests(job, key[0])}
        )
        for key in task_keys(job)
    }
    env = job_environment(
        job,
        job_id="u~tf-distributed",
        user="u",
        virtual_cluster="research",
        placements=places,
        master_port=1,
    )
    assert env["PAI_TASK_ROLE_ps_HOST_LIST"] == "h-ps-0:1000,h-ps-1:1000"
    assert env["PAI_TASK_ROLE_TASK_COUNT_worker"] == "4"


def _errors(doc: dict[str, Any]) -> list[str]:
    with pytest.raises(SpecError) as info:
        parse_job(json.dumps(doc))
    return [str(e) for e in info.value.errors]


BASE: dict[str, Any] = {
    "jobName": "j",
    "image": "img",
    "taskRoles": [{"name": "w", "taskNumber": 2, "command": "true"}],
}


def _with(**change: Any) -> dict[str, Any]:
    return {**BASE, **change}


def _role(**change: Any) -> dict[str, Any]:
    return _with(taskRoles=[{**BASE["taskRoles"][0], **change}])


@pytest.mark.parametrize(
    ("doc", "expected"),
    [
        (_with(gpuType="V 100"), "gpuType: 'V 100' is not a GPU type name"),
        (_with(gpuType=["V100"]), "gpuType: must be text"),
        (
            _with(
                gpuType="V100",
                extras={"hivedScheduler": {"taskRoles": {"w": {"skuType": "K80"}}}},
            ),
            "gpuType: is 'V100' but extras.hivedScheduler.taskRoles.w.skuType is 'K80'",
        ),
        (
            _with(
                gpuType="V100",
                extras={"hivedScheduler": {"taskRoles": {"w": {"skuNum": -1}}}},
            ),
            "extras.hivedScheduler.taskRoles.w.skuNum: must be ≥ 0",
        ),
        (_with(authFile="hdfs://x/auth"), "authFile: cannot be converted"),
        (_with(retryCount=-1), "retryCount: -1 (retry without limit) cannot be converted"),
        (_with(color="red"), "color: is not a field of OpenPAI v1 jobs"),
        (_role(gpuTyp=1), "taskRoles.0.gpuTyp: is not a field of OpenPAI v1 jobs"),
        (
            _role(portList=[{"label": "http", "beginAt": 8080}]),
            "taskRoles.0.portList.0.beginAt: a fixed first port cannot be converted",
        ),
        (_role(portList=[{"portNumber": 1}]), "taskRoles.0.portList.0.label: is required"),
        (_with(taskRoles=[]), "taskRoles: must list at least one task role"),
        (
            _with(taskRoles=[BASE["taskRoles"][0], BASE["taskRoles"][0]]),
            "taskRoles.1.name: task role 'w' is listed twice",
        ),
        (_with(jobEnvs={"my-var": 1}), "jobEnvs.my-var: is not a shell variable name"),
        (_with(jobEnvs={"v": [1]}), "jobEnvs.v: must be a single value"),
        # Errors of the v2 model are reported at the v1 field the value came from.
        (_role(gpuNumber=-1), "taskRoles.0.gpuNumber: must be ≥ 0 (got -1)"),
        (_role(taskNumber="two"), "taskRoles.0.taskNumber: must be a whole number"),
        (_role(name="w.1"), "taskRoles.0.name: 'w.1' is not a valid name"),
        (
            _role(minFailedTaskCount=5),
            "taskRoles.0.minFailedTaskCount: is 5 but the role has only 2",
        ),
        (_role(command=None), "taskRoles.0.command: is required"),
        (_with(jobName="a.b"), "jobName: 'a.b': must match"),
        (_role(portList=[{"label": "a-b"}]), "taskRoles.0.portList.0: 'a-b' is not a valid name"),
        (_role(portList=[{"label": "a", "portNumber": -1}]), "taskRoles.0.portList.0: must be ≥ 0"),
    ],
)
def test_what_cannot_be_converted_names_the_v1_field(doc: dict[str, Any], expected: str) -> None:
    errors = _errors(doc)
    assert any(e.startswith(expected) for e in errors), errors


def test_gpu_type_is_every_roles_sku_type() -> None:
    """v1's job-wide gpuType is OpenPAI v2's per-role skuType, which flavors read through
    JobProtocol.gpu_type; what else the job's extras give the role is kept."""
    job = parse_job((HERE / "unit" / "specs_v1" / "gpu-type.json").read_text()).job
    assert [job.gpu_type(r) for r in job.role_names] == ["V100", "V100"]
    hived = job.extras.hived_scheduler
    assert hived is not None and hived.job_priority_class == "prod"
    assert hived.task_roles["worker"].affinity_group_name == "bert"
    assert parse_job(json.dumps(_with(gpuType=""))).job.gpu_type("w") is None
    # The same type given twice is no conflict.
    same = _with(
        gpuType="V100", extras={"hivedScheduler": {"taskRoles": {"w": {"skuType": "V100"}}}}
    )
    assert parse_job(json.dumps(same)).job.gpu_type("w") == "V100"


def test_name_and_vc_overrides_apply_to_a_v1_job() -> None:
    parsed = parse_job(json.dumps(BASE), name="other", virtual_cluster="research")
    assert (parsed.job.name, parsed.job.virtual_cluster) == ("other", "research")


def test_a_v2_job_with_a_task_role_list_is_not_taken_for_v1() -> None:
    doc = {"protocolVersion": 2, "name": "x", "type": "job", "taskRoles": ["w"]}
    assert "taskRoles: must be a mapping (got a list)" in _errors(doc)
