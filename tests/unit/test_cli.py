"""`jupyter pai …` as a user runs it: real processes against a real local state directory."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

JOB = """
name: cli-job
command: "echo value=<% $parameters.x %> rank=$RANK gpus=$CUDA_VISIBLE_DEVICES"
parameters: {x: default}
gpus: 1
instances: 2
"""


@pytest.fixture
def cli(tmp_path: Path):
    env = {
        **os.environ,
        "JUPYTER_PAI_STATE_DIR": str(tmp_path / "state"),
        "JUPYTER_PAI_LOCAL_GPUS": "2",
        "JUPYTER_PAI_BACKEND": "local",
        "JUPYTER_CONFIG_DIR": str(tmp_path / "config"),
    }

    def run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "jupyter_pai.cli", *args],
            input=stdin,
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
        )

    return run


def test_submit_wait_logs_show_and_list(cli, tmp_path: Path) -> None:
    (tmp_path / "job.yaml").write_text(JOB)
    done = cli("submit", "job.yaml", "--param", "x=42", "--wait")
    assert done.returncode == 0, done.stderr
    assert "SUCCEEDED" in done.stdout
    job_id = json.loads(cli("jobs", "--json").stdout)["items"][0]["id"]
    log = cli("logs", job_id, "--index", "1")
    assert log.stdout.strip().startswith("value=42 rank=1 gpus=")
    shown = json.loads(cli("show", job_id, "--json").stdout)
    assert shown["state"] == "SUCCEEDED"
    assert sorted(g for t in shown["tasks"] for g in t["gpus"]) == ["0", "1"]
    table = cli("jobs").stdout
    assert job_id in table and "SUCCEEDED" in table


def test_exit_codes(cli, tmp_path: Path) -> None:
    (tmp_path / "job.yaml").write_text(JOB)
    (tmp_path / "fail.yaml").write_text("name: failing\ncommand: exit 7\n")
    (tmp_path / "bad.yaml").write_text("name: bad\ncommand: x\ngpus: -2\n")
    assert cli("submit", "job.yaml").returncode == 0
    taken = cli("submit", "job.yaml")
    assert taken.returncode == 4 and "cli-job-2" in taken.stderr
    failed = cli("submit", "fail.yaml", "--wait", "--json")
    assert failed.returncode == 1
    assert json.loads(failed.stdout)["exitCode"] == 7
    invalid = cli("submit", "bad.yaml")
    assert invalid.returncode == 2 and "gpus" in invalid.stderr
    assert cli("show", "nobody~nothing").returncode == 3
    assert cli("validate", "bad.yaml").returncode == 2
    assert cli("submit", "missing.yaml").returncode == 2


def test_validate_reads_stdin_and_warns_about_unknown_fields(cli) -> None:
    out = cli("validate", "-", "--json", stdin="name: v\ncommand: echo\nfancy: 1\n")
    assert out.returncode == 0
    assert json.loads(out.stdout)["warnings"] == [
        {"path": "fancy", "message": "unknown field, ignored"}
    ]


def test_validate_show_prints_a_v1_job_as_protocol_v2(cli, tmp_path: Path) -> None:
    v1 = {
        "jobName": "old",
        "image": "img",
        "jobEnvs": {"lr": 0.1},
        "taskRoles": [{"name": "main", "taskNumber": 2, "command": "python train.py"}],
    }
    (tmp_path / "old.json").write_text(json.dumps(v1))
    out = cli("validate", "old.json", "--show")
    assert out.returncode == 0, out.stderr
    assert "warning: converted from an OpenPAI v1 job" in out.stderr
    doc = yaml.safe_load(out.stdout)
    assert (doc["protocolVersion"], doc["name"]) == (2, "old")
    assert doc["taskRoles"]["main"]["instances"] == 2
    assert doc["deployments"][0]["taskRoles"]["main"]["preCommands"] == ["export lr=0.1"]
    shown = json.loads(cli("validate", "old.json", "--show", "--json").stdout)
    assert shown["job"] == doc and shown["warnings"][0]["path"] == ""


def test_vcs_and_stop(cli, tmp_path: Path) -> None:
    (tmp_path / "long.yaml").write_text("name: long\ncommand: sleep 60\ngpus: 2\n")
    assert cli("submit", "long.yaml").returncode == 0
    vcs = json.loads(cli("vcs", "--json").stdout)["items"]
    assert vcs[0]["name"] == "default" and vcs[0]["capacity"]["gpu"] == 2
    job_id = json.loads(cli("jobs", "--json").stdout)["items"][0]["id"]
    stopped = json.loads(cli("stop", job_id, "--json").stdout)
    assert stopped["state"] in ("STOPPING", "STOPPED")


def test_submit_prints_what_the_backend_will_not_run(cli, tmp_path: Path) -> None:
    (tmp_path / "plugins.yaml").write_text(
        "protocolVersion: 2\nname: plugins\ntype: job\n"
        "taskRoles: {main: {commands: ['echo ran']}}\n"
        "extras:\n  com.microsoft.pai.runtimeplugin:\n"
        "    - {plugin: teamwise_storage, parameters: {storageConfigNames: [PAI_SHARE]}}\n"
    )
    done = cli("submit", "plugins.yaml", "--wait")
    assert done.returncode == 0, done.stderr
    assert (
        "warning: extras.com.microsoft.pai.runtimeplugin.0: runtime plugin teamwise_storage "
        "is deprecated in OpenPAI"
    ) in done.stderr
