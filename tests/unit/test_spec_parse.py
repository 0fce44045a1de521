"""parse_job: protocol v2 and the short form, defaults, warnings, overrides, error paths."""

from __future__ import annotations

import json

import pytest
import yaml

from jupyter_pai.errors import FieldError, SpecError
from jupyter_pai.runtime import submission_warnings
from jupyter_pai.spec import JobProtocol, load_document, parse_job
from jupyter_pai.spec.shortform import expand
from tests.spec_corpus import example_files, golden, normalized

MINIMAL = """
protocolVersion: 2
name: minimal
type: job
taskRoles:
  worker:
    commands: [echo hi]
"""


def errors_of(source: object, **kwargs: object) -> list[str]:
    with pytest.raises(SpecError) as info:
        parse_job(source, **kwargs)  # type: ignore[arg-type]
    return [str(e) for e in info.value.errors]


@pytest.mark.parametrize("path", example_files(), ids=lambda p: p.name)
def test_examples_parse_without_warnings(path) -> None:  # type: ignore[no-untyped-def]
    parsed = parse_job(path.read_text())
    v1 = path.name.startswith("openpai-v1")
    # A v1 job says, once, that it was converted; nothing else.
    expected = ["converted from an OpenPAI v1 job (jobName, a taskRoles list) to protocol v2"]
    assert [str(w) for w in parsed.warnings] == (expected if v1 else [])
    assert isinstance(parsed.job, JobProtocol)
    assert parsed.short_form == path.name.startswith("short-form")
    assert parsed.format == ("short" if parsed.short_form else "v1" if v1 else "v2")


def test_defaults_are_filled_in() -> None:
    job = parse_job(MINIMAL).job
    role = job.task_roles["worker"]
    assert job.protocol_version == 2
    assert role.instances == 1
    assert role.min_failed == 1
    assert role.min_succeeded == 1
    assert role.task_retry_count == 0
    assert role.extra_container_options.shm_mb == 512
    assert role.resource_per_instance.gpu == 0
    assert role.resource_per_instance.ports == {}
    assert job.extras.gang_allocation is True
    assert job.gang_allocation is True
    assert job.virtual_cluster == "default"
    assert job.job_retry_count == 0
    assert job.priority == 10
    assert job.total_gpus == 0 and job.total_instances == 1
    assert job.image_uri("worker") is None
    assert job.deployment() is None


def test_reference_tf_example_reads_like_openpai() -> None:
    job = parse_job((example_files()[0].parent / "tensorflow-ps-worker.yaml").read_text()).job
    assert job.role_names == ["worker", "ps"]
    assert job.task_roles["ps"].min_succeeded == -1
    assert job.task_roles["worker"].min_succeeded == 2
    assert job.total_gpus == 4
    assert job.image_uri("ps") == "openpai/standard:python_3.6-tensorflow_1.15.0-gpu"


@pytest.mark.parametrize("version", ["2", 2, 2.0])
def test_protocol_version_as_text_or_number(version: object) -> None:
    doc = yaml.safe_load(MINIMAL)
    doc["protocolVersion"] = version
    assert parse_job(doc).job.protocol_version == 2


def test_protocol_version_true_is_not_two() -> None:
    doc = yaml.safe_load(MINIMAL)
    doc["protocolVersion"] = True
    assert errors_of(doc) == ["protocolVersion: must be 2 (got True)"]


def test_lenient_shapes() -> None:
    text = MINIMAL.replace("commands: [echo hi]", "commands: echo hi\n    completion:")
    text = text.replace("name: minimal", "name: 2024\nversion: 1.5\nextras:")
    job = parse_job(text).job
    assert job.name == "2024"
    assert job.version == "1.5"
    assert job.task_roles["worker"].commands == ["echo hi"]
    assert job.task_roles["worker"].min_failed == 1
    assert job.extras.gang_allocation is True


def test_every_protocol_field_is_read() -> None:
    doc = {
        "protocolVersion": 2,
        "name": "full",
        "type": "job",
        "version": "1",
        "contributor": "me",
        "description": "all fields",
        "prerequisites": [
            {
                "name": "img",
                "type": "dockerimage",
                "uri": "repo/img:1",
                "auth": {"username": "u", "password": "p4ssword", "registryuri": "repo"},
            },
            {
                "name": "ds",
                "type": "data",
                "uri": ["nfs://a", "nfs://b"],
                "plugin": "com.microsoft.pai.runtimeplugin.cmd",
                "callbacks": [{"event": "taskStarts", "commands": ["echo start"]}],
                "require": ["img"],
                "failurePolicy": "ignore",
            },
            {"name": "code", "type": "script", "uri": "git://code"},
            {"name": "out", "type": "output", "uri": "nfs://out"},
        ],
        "parameters": {"lr": 0.1},
        "secrets": {"token": "s3cr3t-token"},
        "jobRetryCount": 2,
        "deployments": [
            {"name": "d", "taskRoles": {"w": {"preCommands": ["pre"], "postCommands": ["post"]}}}
        ],
        "defaults": {"virtualCluster": "vc1", "deployment": "d"},
        "extras": {
            "gangAllocation": False,
            "hivedScheduler": {
                "jobPriorityClass": "prod",
                "taskRoles": {"w": {"skuType": "V100", "skuNum": 2, "affinityGroupName": "g"}},
            },
            "storages": [
                {"name": "home", "mountPath": "/home/me", "share": False, "readOnly": True}
            ],
            "jobStatusChangeNotification": {
                "running": True,
                "succeeded": True,
                "stopped": True,
                "failed": True,
                "retried": True,
            },
            "com.microsoft.pai.runtimeplugin": [
                {
                    "plugin": "tensorboard",
                    "parameters": {"logdir": {"a": "/x"}},
                    "failurePolicy": "fail",
                    "taskroles": ["w"],
                }
            ],
        },
        "taskRoles": {
            "w": {
                "instances": 3,
                "completion": {"minFailedInstances": -1, "minSucceededInstances": 2},
                "taskRetryCount": 1,
                "dockerImage": "img",
                "prerequisites": ["ds"],
                "data": "ds",
                "output": "out",
                "script": "code",
                "extraContainerOptions": {"shmMB": 64, "infiniband": True},
                "resourcePerInstance": {"cpu": 1.5, "memoryMB": 100, "gpu": 2, "ports": {"tb": 1}},
                "commands": ["ls <% $data.uri %> <% $script.uri %> <% $output.name %>"],
            }
        },
    }
    parsed = parse_job(doc)
    assert parsed.warnings == []
    job = parsed.job
    role = job.task_roles["w"]
    assert (role.min_failed, role.min_succeeded) == (-1, 2)
    assert role.extra_container_options.infiniband is True
    assert role.resource_per_instance.cpu == 1.5
    assert job.extras.hived_scheduler is not None and job.priority == 100
    assert job.extras.hived_scheduler.task_roles["w"].sku_num == 2
    assert job.extras.storages[0].effective_mount_path == "/home/me"
    assert job.extras.storages[0].read_only and not job.extras.storages[0].share
    assert job.extras.job_status_change_notification is not None
    assert job.extras.job_status_change_notification.retried
    assert job.extras.runtime_plugins[0].taskroles == ["w"]
    assert job.prerequisites[1].callbacks[0].event == "taskStarts"
    assert job.virtual_cluster == "vc1"
    assert job.deployment() is not None
    assert job.storage("home") is not None and job.storage("nope") is None
    # Round trip: the normalized document parses to the same model.
    again = parse_job(job.model_dump(mode="json", by_alias=True, exclude_none=True)).job
    assert again == job


def test_unknown_fields_warn_with_their_path() -> None:
    text = MINIMAL + (
        "    gpuType: V100\nfoo: 1\nextras:\n  submitFrom: portal\n  hivedScheduler:\n    bar: 2\n"
    )
    parsed = parse_job(text)
    assert [str(w) for w in parsed.warnings] == [
        "foo: unknown field, ignored",
        "extras.hivedScheduler.bar: unknown field, ignored",
        "taskRoles.worker.gpuType: unknown field, ignored",
    ]


def test_unknown_runtime_plugin_and_unused_deployment_warn() -> None:
    text = MINIMAL + (
        "extras:\n  com.microsoft.pai.runtimeplugin: [{plugin: horovod}]\n"
        "deployments: [{name: d, taskRoles: {worker: {preCommands: [x]}}}]\n"
    )
    parsed = parse_job(text)
    # An unknown plugin is each backend's warning at submission (jupyter_pai.runtime).
    assert [w.path for w in parsed.warnings] == ["defaults.deployment"]
    for backend in ("local", "kubernetes"):
        assert [w.path for w in submission_warnings(parsed.job, backend)] == [
            "extras.com.microsoft.pai.runtimeplugin.0.plugin"
        ]


def test_every_error_is_reported_at_once() -> None:
    text = MINIMAL.replace(
        "commands: [echo hi]", "instances: 0\n    resourcePerInstance: {gpu: -1}"
    )
    assert errors_of(text) == [
        "taskRoles.worker.instances: must be ≥ 1 (got 0)",
        "taskRoles.worker.resourcePerInstance.gpu: must be ≥ 0 (got -1)",
        "taskRoles.worker.commands: is required",
    ]


@pytest.mark.parametrize("role", ["str", "int_worker", "list", "float"])
def test_role_names_that_look_like_pydantic_markers_stay_in_paths(role: str) -> None:
    text = MINIMAL.replace("worker:", f"{role}:").replace("[echo hi]", "[echo]\n    instances: x")
    assert errors_of(text) == [f"taskRoles.{role}.instances: must be a whole number (got 'x')"]


def test_spec_error_json() -> None:
    with pytest.raises(SpecError) as info:
        parse_job(MINIMAL.replace("type: job", "type: jobs"))
    assert info.value.status == 400
    assert info.value.to_json() == {
        "message": "invalid job specification: type: must be 'job' (got 'jobs')",
        "errors": [{"path": "type", "message": "must be 'job' (got 'jobs')"}],
    }


def test_json_text_bytes_and_mapping_inputs() -> None:
    doc = yaml.safe_load(MINIMAL)
    as_json = json.dumps(doc)
    a, b, c = parse_job(as_json), parse_job(as_json.encode()), parse_job(doc)
    assert a.job == b.job == c.job
    # The caller's mapping is never modified.
    parse_job(doc, name="renamed", parameters={"x": 1}, virtual_cluster="vc")
    assert doc == yaml.safe_load(MINIMAL)


def test_json_with_tabs_is_read_as_json() -> None:
    text = (
        '{\n\t"protocolVersion": 2,\n\t"name": "t",\n\t"type": "job",\n'
        '\t"taskRoles": {"w": {"commands": ["x"]}}\n}'
    )
    assert parse_job(text).job.name == "t"


def test_load_document_rejects_duplicate_keys_with_their_path() -> None:
    with pytest.raises(SpecError) as info:
        load_document("a: 1\nb:\n  - {c: 1, c: 2}\n")
    assert info.value.errors == [FieldError("b.0.c", "is written twice (again at line 3)")]


def test_yaml_merge_keys_are_allowed() -> None:
    text = MINIMAL.replace(
        "taskRoles:\n  worker:\n    commands: [echo hi]",
        "x-common: &common {commands: [echo hi]}\n"
        "taskRoles:\n  worker:\n    <<: *common\n    instances: 2",
    )
    parsed = parse_job(text)
    assert parsed.job.task_roles["worker"].instances == 2
    assert [w.path for w in parsed.warnings] == ["x-common"]


def test_overrides() -> None:
    parsed = parse_job(
        MINIMAL + "parameters: {a: 1, b: 2}\n",
        parameters={"b": 3},
        virtual_cluster="research",
        name="other",
    )
    assert parsed.job.parameters == {"a": 1, "b": 3}
    assert parsed.job.virtual_cluster == "research"
    assert parsed.job.name == "other"
    short = parse_job({"image": "x", "command": "y", "name": "n"}, virtual_cluster="vc2", name="m")
    assert short.job.virtual_cluster == "vc2" and short.job.name == "m"


def test_override_parameters_when_document_has_a_bad_parameters_value() -> None:
    doc = {**yaml.safe_load(MINIMAL), "parameters": None}
    assert parse_job(doc, parameters={"x": 1}).job.parameters == {"x": 1}


# -- short form ------------------------------------------------------------------------


def test_short_form_expands_to_protocol() -> None:
    parsed = parse_job(
        {
            "name": "quick",
            "image": "pytorch/pytorch:2.4.0-cuda12.1-cudnn9-runtime",
            "command": "python train.py",
            "gpus": 2,
            "instances": 3,
            "vc": "research",
            "cpu": 4,
            "memoryMB": 8192,
            "ports": {"tb": 1},
            "gang": False,
            "storages": ["data", {"name": "home", "readOnly": True}],
            "retries": 1,
            "taskRetries": 2,
            "description": "d",
        }
    )
    job = parsed.job
    assert parsed.short_form and parsed.warnings == []
    role = job.task_roles["worker"]
    assert role.instances == 3 and role.resource_per_instance.gpu == 2
    assert role.resource_per_instance.cpu == 4 and role.resource_per_instance.memory_mb == 8192
    assert role.commands == ["python train.py"]
    assert role.task_retry_count == 2 and job.job_retry_count == 1
    assert job.image_uri("worker") == "pytorch/pytorch:2.4.0-cuda12.1-cudnn9-runtime"
    assert job.virtual_cluster == "research"
    assert job.extras.gang_allocation is False
    assert [s.effective_mount_path for s in job.extras.storages] == ["/mnt/data", "/mnt/home"]
    assert job.total_gpus == 6


def test_short_form_expansion_golden() -> None:
    path = next(p for p in example_files() if p.name == "short-form.yaml")
    expanded = expand(load_document(path.read_text()))
    assert normalized(expanded) == golden("short-form.expanded.json", expanded)


def test_short_form_aliases_and_role() -> None:
    job = parse_job({"name": "n", "commands": ["a", "b"], "gpu": 1, "role": "trainer"}).job
    assert job.role_names == ["trainer"]
    assert job.task_roles["trainer"].commands == ["a", "b"]
    assert job.total_gpus == 1


@pytest.mark.parametrize(
    ("doc", "expected"),
    [
        ({"name": "n", "image": "i"}, ["command: is required"]),
        ({"name": "n", "command": "x", "gpus": -1}, ["gpus: must be ≥ 0 (got -1)"]),
        (
            {"name": "n", "command": "x", "gpu": "two"},
            ["gpu: must be a whole number or TYPE:COUNT such as H100-80GB:2 (got 'two')"],
        ),
        (
            {"name": "n", "command": "x", "gpus": ":2"},
            ["gpus: ':2' has no GPU type before ':' (write TYPE:COUNT, H100-80GB:2)"],
        ),
        (
            {"name": "n", "command": "x", "gpus": "H100:"},
            ["gpus: 'H100:' has no GPU count after ':' (write TYPE:COUNT, H100-80GB:2)"],
        ),
        (
            {"name": "n", "command": "x", "gpus": "H100:-1"},
            ["gpus: 'H100:-1': the GPU count must be a whole number ≥ 1 (got '-1')"],
        ),
        (
            {"name": "n", "command": "x", "gpu": "a b:1"},
            [
                "gpu: 'a b' is not a GPU type name: letters, digits, '.', '_' and '-', "
                "a letter or digit first and last, at most 63 characters"
            ],
        ),
        (
            {"name": "n", "command": "x", "gpuType": "H100 80GB"},
            [
                "gpuType: 'H100 80GB' is not a GPU type name: letters, digits, '.', '_' and "
                "'-', a letter or digit first and last, at most 63 characters"
            ],
        ),
        (
            {"name": "n", "command": "x", "gpuType": "A100-40GB", "gpus": "H100-80GB:2"},
            ["gpuType: is 'A100-40GB' but gpus names 'H100-80GB': give the type once"],
        ),
        (
            {"name": "n", "command": "x", "gpuType": "A100-40GB", "gpus": 0},
            ["gpuType: 'A100-40GB' is of no use with gpus: 0; give at least 1 GPU"],
        ),
        (
            {
                "name": "n",
                "command": "x",
                "gpus": "A100-40GB:1",
                "extras": {"hivedScheduler": {"taskRoles": {"worker": {"skuType": "K80"}}}},
            },
            [
                "gpus: names GPU type 'A100-40GB' but "
                "extras.hivedScheduler.taskRoles.worker.skuType is 'K80': give the type once"
            ],
        ),
        ({"name": "n", "commands": []}, ["commands: must not be empty"]),
        ({"name": "n", "command": "x", "instances": 0}, ["instances: must be ≥ 1 (got 0)"]),
        ({"name": "n", "command": "x", "vc": ""}, ["vc: must not be empty"]),
        ({"name": "n", "command": "x", "cpu": -1}, ["cpu: must be ≥ 0 (got -1)"]),
        ({"name": "n", "command": "x", "memoryMB": -1}, ["memoryMB: must be ≥ 0 (got -1)"]),
        ({"name": "n", "command": "x", "retries": -1}, ["retries: must be ≥ 0 (got -1)"]),
        ({"name": "n", "command": "x", "taskRetries": -1}, ["taskRetries: must be ≥ 0 (got -1)"]),
        (
            {"name": "n", "command": "x", "gang": "often"},
            ["gang: must be true or false (got 'often')"],
        ),
        ({"name": "n", "command": "x", "ports": {"a-b": 1}}, None),
        (
            {
                "name": "n",
                "command": "x",
                "extras": {"storages": [{"name": "a", "mountPath": "b"}]},
            },
            ["extras.storages.0.mountPath: must be an absolute path such as /mnt/data (got 'b')"],
        ),
    ],
)
def test_short_form_errors_name_the_short_key(
    doc: dict[str, object], expected: list[str] | None
) -> None:
    found = errors_of(doc)
    if expected is None:
        assert found[0].startswith("ports.a-b: 'a-b' is not a valid name")
    else:
        assert found == expected


@pytest.mark.parametrize(
    ("given", "gpus"),
    [
        ({"gpuType": "H100-80GB", "gpus": 2}, 2),
        ({"gpus": "A100-40GB:2"}, 2),
        ({"gpu": "A100-40GB:2", "gpuType": "A100-40GB"}, 2),
        ({"gpuType": "H100-80GB"}, 1),
    ],
)
def test_short_form_gpu_type_is_opais_sku_type(given: dict[str, object], gpus: int) -> None:
    """``gpuType`` (or ``gpus: TYPE:N``) becomes OpenPAI's skuType of the role, read back
    by JobProtocol.gpu_type; other hivedScheduler settings are kept."""
    doc = {
        "name": "n",
        "command": "x",
        "role": "trainer",
        "extras": {"hivedScheduler": {"jobPriorityClass": "prod"}},
        **given,
    }
    parsed = parse_job(doc)
    assert parsed.warnings == []
    job = parsed.job
    named = given.get("gpuType") or str(given.get("gpus", given.get("gpu"))).split(":")[0]
    assert job.gpu_type("trainer") == named
    assert job.task_roles["trainer"].resource_per_instance.gpu == gpus
    assert parsed.document["extras"]["hivedScheduler"] == {
        "jobPriorityClass": "prod",
        "taskRoles": {"trainer": {"skuType": named}},
    }
    assert job.priority == 100


def test_short_form_without_a_gpu_type_adds_no_hived_section() -> None:
    parsed = parse_job({"name": "n", "command": "x", "gpus": "2"})
    assert parsed.job.gpu_type("worker") is None
    assert parsed.job.extras.hived_scheduler is None
    assert parsed.job.total_gpus == 2


def test_protocol_gpu_type_reads_sku_type() -> None:
    job = parse_job(
        MINIMAL + "extras: {hivedScheduler: {taskRoles: {worker: {skuType: DGX2-V100}}}}\n"
    ).job
    assert job.gpu_type("worker") == "DGX2-V100"
    assert parse_job(MINIMAL).job.gpu_type("worker") is None


def test_short_form_keeps_protocol_sections_and_warns_unknown_keys() -> None:
    parsed = parse_job(
        {
            "name": "n",
            "image": "img:1",
            "command": "x",
            "gpus": 1,
            "imagePullPolicy": "Always",
            "prerequisites": [{"name": "ds", "type": "data", "uri": "nfs://d"}],
            "extras": {"hivedScheduler": {"jobPriorityClass": "oppo"}},
        }
    )
    assert [str(w) for w in parsed.warnings] == ["imagePullPolicy: unknown field, ignored"]
    assert [p.name for p in parsed.job.prerequisites] == ["ds", "image"]
    assert parsed.job.priority == -1


def test_a_document_with_neither_form_is_read_as_protocol() -> None:
    assert errors_of({"name": "lonely"}) == [
        "protocolVersion: is required",
        "type: is required",
        "taskRoles: is required",
    ]


@pytest.mark.parametrize(
    ("doc", "expected"),
    [
        (
            {"name": "n", "command": "echo <% $secrets.t %>"},
            "command: $secrets.t is not defined in secrets; it is left as <% $secrets.t %>",
        ),
        (
            {"name": "n", "command": ["ok", "echo <% $parameters.p %>"]},
            "command.1: $parameters.p is not defined in parameters; it is left as",
        ),
    ],
)
def test_short_form_unresolved_markers_warn_at_the_short_key(
    doc: dict[str, object], expected: str
) -> None:
    warnings = [str(w) for w in parse_job(doc).warnings]
    assert any(w.startswith(expected) for w in warnings), warnings
