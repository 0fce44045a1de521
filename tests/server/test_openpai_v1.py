"""OpenPAI v1 JSON jobs over REST on the local backend: submitted as they are, converted with
a warning, run as a ps/worker job with v1's variables; ``POST convert`` shows the
protocol-v2 job without submitting it; what cannot be converted is a 400 naming the v1
field, with nothing created."""

from __future__ import annotations

import json

from .pai import PY, PAIClient, parse_env

ENV_DUMP = "env | grep -E '^(PAI_|model=|batch_size=)' | sort"


def v1_job(name: str) -> dict[str, object]:
    return {
        "jobName": name,
        "image": "openpai/pai.example.tensorflow",
        "dataDir": "/data/$PAI_USER_NAME/cifar",
        "outputDir": "/out/cifar",
        "codeDir": "/code/cifar",
        "virtualCluster": "default",
        "taskRoles": [
            {
                "name": "ps_server",
                "taskNumber": 1,
                "cpuNumber": 1,
                "memoryMB": 256,
                "gpuNumber": 0,
                "command": f"{ENV_DUMP} && {PY} -c 'print(\"ps done\")'",
                "minSucceededTaskCount": None,
            },
            {
                "name": "worker",
                "taskNumber": 2,
                "cpuNumber": 1,
                "memoryMB": 256,
                "gpuNumber": 1,
                "portList": [{"label": "grpc", "beginAt": 0, "portNumber": 2}],
                "command": f"{ENV_DUMP} && echo worker $PAI_TASK_ROLE_ps_server_HOST_LIST",
                "minSucceededTaskCount": 2,
            },
        ],
        "retryCount": 0,
        "jobEnvs": {"model": "resnet20", "batch_size": 32},
    }


async def test_v1_ps_worker_job_runs_with_its_variables(pai: PAIClient) -> None:
    r = await pai.post_job(json.dumps(v1_job("v1_ps_worker")), content_type="application/json")
    assert r.code == 201, r
    submitted = r.json()
    warnings = [w["message"] for w in submitted["warnings"]]
    assert warnings[0].startswith("converted from an OpenPAI v1 job"), warnings
    assert any("PAI_CODE_DIR" in w for w in warnings), warnings
    created = submitted["job"]
    assert created["totalGpuNumber"] == 2 and created["totalTaskNumber"] == 3
    job = await pai.wait_state(created["id"], "SUCCEEDED", timeout=90)
    user = job["user"]

    ps = parse_env(await pai.log(job["id"], role="ps_server", index=0))
    assert ps["PAI_DATA_DIR"] == f"/data/{user}/cifar"  # expanded in the task, as on v1
    assert ps["PAI_OUTPUT_DIR"] == "/out/cifar"
    assert ps["PAI_CODE_DIR"] == "/code/cifar"
    assert (ps["model"], ps["batch_size"]) == ("resnet20", "32")
    assert ps["PAI_TASK_ROLE_LIST"] == "ps_server,worker"
    assert ps["PAI_RESOURCE_ps_server"] == "0,1,256,64"  # v1's shm default, declared
    assert ps["PAI_MIN_SUCCEEDED_TASK_COUNT_ps_server"] == "-1"
    for i in range(2):
        log = await pai.log(job["id"], role="worker", index=i)
        env = parse_env(log)
        assert env["PAI_CURRENT_TASK_ROLE_CURRENT_TASK_INDEX"] == str(i)
        assert len(env["PAI_CONTAINER_HOST_grpc_PORT_LIST"].split(",")) == 2
        assert f"worker {ps['PAI_TASK_ROLE_ps_server_HOST_LIST']}" in log


async def test_convert_shows_the_v2_job_without_submitting(pai: PAIClient) -> None:
    r = await pai.request(
        "POST",
        "convert",
        body=json.dumps(v1_job("shown")),
        headers={"Content-Type": "application/json"},
    )
    assert r.code == 200, r
    body = r.json()
    assert body["format"] == "v1"
    job = body["job"]
    assert job["protocolVersion"] == 2 and job["name"] == "shown"
    assert list(job["taskRoles"]) == ["ps_server", "worker"]
    assert job["taskRoles"]["worker"]["resourcePerInstance"]["ports"] == {"grpc": 2}
    assert body["warnings"][0]["message"].startswith("converted from an OpenPAI v1 job")
    assert await pai.jobs() == []

    # A v2 job comes back as it is, its secrets hidden.
    v2 = "protocolVersion: 2\nname: v2\ntype: job\nsecrets: {k: s3cr3t-val}\ntaskRoles: {w: {commands: [echo <% $secrets.k %>]}}\n"
    r = await pai.request("POST", "convert", body=v2, headers={"Content-Type": "text/yaml"})
    assert r.code == 200, r
    assert r.json()["format"] == "v2" and r.json()["job"]["secrets"] == {"k": "******"}
    assert "s3cr3t-val" not in r.text


async def test_what_cannot_be_converted_is_a_400_at_the_v1_field(pai: PAIClient) -> None:
    doc = v1_job("bad")
    doc["authFile"] = "hdfs://namenode/user/auth.txt"
    roles = doc["taskRoles"]
    assert isinstance(roles, list)
    roles[1]["portList"] = [{"label": "grpc", "beginAt": 20000}]
    for path in ("jobs", "convert"):
        r = await pai.request(
            "POST", path, body=json.dumps(doc), headers={"Content-Type": "application/json"}
        )
        assert r.code == 400, r
        paths = [e["path"] for e in r.json()["errors"]]
        assert paths == ["authFile", "taskRoles.1.portList.0.beginAt"], r.json()
    assert await pai.jobs() == []
    assert pai.state_job_dirs() == []
