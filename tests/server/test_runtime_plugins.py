"""OpenPAI's runtime plugins on the local backend, through the REST API: ``cmd`` pre/post
commands and a prerequisite's callbacks run around the user's commands in OpenPAI's order,
a failing one fails the task (unless ``failurePolicy: ignore``), ``git`` clones into the
working directory, ``tensorboard`` serves on its declared port, and what the local backend
does not run is a warning in the submission's answer."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from tests.httpwait import wait_for_http_ok

from .pai import PY, PAIClient, job_spec

PLUGINS = "com.microsoft.pai.runtimeplugin"


def with_plugins(
    name: str, commands: list[str], plugins: list[dict[str, Any]], **top: Any
) -> dict[str, Any]:
    spec = job_spec(name, {"main": {"commands": commands, "prerequisites": ["setup"]}}, **top)
    spec.setdefault("prerequisites", []).append(
        {
            "name": "setup",
            "type": "script",
            "plugin": f"{PLUGINS}.cmd",
            "callbacks": [
                {"event": "taskStarts", "commands": ["echo step callback-start"]},
                {"event": "taskSucceeds", "commands": ["echo step callback-end"]},
            ],
        }
    )
    spec["extras"] = {PLUGINS: plugins}
    return spec


def steps(log: str) -> list[str]:
    return [line.split(" ", 1)[1] for line in log.splitlines() if line.startswith("step ")]


async def test_cmd_and_callbacks_run_in_openpai_order(pai: PAIClient) -> None:
    spec = with_plugins(
        "cmd_order",
        ["echo step user"],
        [
            {
                "plugin": "cmd",
                "parameters": {
                    "preCommands": ["echo step cmd-pre"],
                    "postCommands": ["echo step cmd-post"],
                },
            },
            {"plugin": "cmd", "parameters": {"postCommands": ["echo step last-post"]}},
        ],
    )
    job_id = (await pai.submit(spec))["id"]
    await pai.wait_state(job_id, "SUCCEEDED", timeout=30)
    log = await pai.log(job_id)
    # Pre parts in plugin order (the role's prerequisites first), post parts reversed.
    assert steps(log) == [
        "callback-start",
        "cmd-pre",
        "user",
        "last-post",
        "cmd-post",
        "callback-end",
    ], log
    assert "[jupyter-pai] runtime plugin cmd (prerequisites.0): taskStarts" in log


async def test_a_failing_pre_command_fails_the_task_unless_ignored(pai: PAIClient) -> None:
    failing = with_plugins(
        "pre_fails",
        ["echo step user"],
        [{"plugin": "cmd", "parameters": {"preCommands": ["echo step cmd-pre", "exit 7"]}}],
    )
    job_id = (await pai.submit(failing))["id"]
    job = await pai.wait_state(job_id, "FAILED", timeout=30)
    assert job["tasks"][0]["exitCode"] == 7
    assert steps(await pai.log(job_id)) == ["callback-start", "cmd-pre"]

    ignored = with_plugins(
        "pre_ignored",
        ["echo step user"],
        [
            {
                "plugin": "cmd",
                "failurePolicy": "ignore",
                "parameters": {"preCommands": ["echo step cmd-pre", "exit 7"]},
            }
        ],
    )
    job_id = (await pai.submit(ignored))["id"]
    await pai.wait_state(job_id, "SUCCEEDED", timeout=30)
    log = await pai.log(job_id)
    assert steps(log) == ["callback-start", "cmd-pre", "user", "callback-end"]
    assert "failed (exit 7); ignored (failurePolicy: ignore)" in log


async def test_a_failing_user_command_skips_the_post_commands(pai: PAIClient) -> None:
    spec = with_plugins(
        "user_fails",
        ["echo step user", "exit 3"],
        [{"plugin": "cmd", "parameters": {"postCommands": ["echo step cmd-post"]}}],
    )
    job_id = (await pai.submit(spec))["id"]
    job = await pai.wait_state(job_id, "FAILED", timeout=30)
    assert job["tasks"][0]["exitCode"] == 3
    assert steps(await pai.log(job_id)) == ["callback-start", "user"]


def _bare_repo(where: Path) -> Path:
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"]
    seed, bare = where / "seed", where / "repo.git"
    subprocess.run([*git, "init", "-q", str(seed)], check=True)
    (seed / "hello.py").write_text("print('hello from the clone')\n")
    subprocess.run([*git, "-C", str(seed), "add", "."], check=True)
    subprocess.run([*git, "-C", str(seed), "commit", "-qm", "first"], check=True)
    subprocess.run([*git, "clone", "-q", "--bare", str(seed), str(bare)], check=True)
    return bare


async def test_git_clones_into_the_working_directory(pai: PAIClient, tmp_path: Path) -> None:
    repo = _bare_repo(tmp_path)
    spec = job_spec(
        "git_clone",
        {"main": {"commands": [f"{PY} src/hello.py", 'echo "wd=$PAI_WORK_DIR"']}},
        extras={
            PLUGINS: [
                {
                    "plugin": "git",
                    "parameters": {
                        "repo_uri": str(repo),
                        "options": ["--depth 1"],
                        "clone_dir": "src",
                    },
                }
            ]
        },
    )
    job_id = (await pai.submit(spec))["id"]
    await pai.wait_state(job_id, "SUCCEEDED", timeout=30)
    log = await pai.log(job_id)
    assert "hello from the clone" in log
    assert (pai.root_dir / "src" / "hello.py").is_file()
    # A second clone into the same, now non-empty, directory fails the task, as on OpenPAI.
    spec["name"] = "git_again"
    job_id = (await pai.submit(spec))["id"]
    await pai.wait_state(job_id, "FAILED", timeout=30)
    assert "already exists and is not an empty directory" in await pai.log(job_id)


async def test_tensorboard_serves_on_its_declared_port(pai: PAIClient, tmp_path: Path) -> None:
    logdir = tmp_path / "tb"
    logdir.mkdir()
    spec = job_spec(
        "tensorboard",
        {"main": {"commands": ["sleep 120"]}},
        extras={
            PLUGINS: [
                {
                    "plugin": "tensorboard",
                    "parameters": {"port": 6006, "logdir": {"run": str(logdir)}},
                }
            ]
        },
    )
    r = await pai.post_job(spec)
    assert r.code == 201, r
    submitted = r.json()
    # The given port is replaced by a free one here, and the answer says so.
    assert any(
        w["path"] == f"extras.{PLUGINS}.0.parameters.port" and "instead of 6006" in w["message"]
        for w in submitted["warnings"]
    ), submitted["warnings"]
    job_id = submitted["job"]["id"]
    job = await pai.wait_state(job_id, "RUNNING", timeout=30)
    ports = job["tasks"][0]["ports"]
    assert list(ports) == ["tensorboard", "ssh", "http"]
    url = f"http://127.0.0.1:{ports['tensorboard'][0]}/"
    status = await wait_for_http_ok(url, 60)
    assert status == 200, await pai.log(job_id)
    await pai.stop(job_id)
    await pai.wait_state(job_id, "STOPPED", timeout=30)


async def test_what_the_local_backend_does_not_run_is_a_warning(pai: PAIClient) -> None:
    spec = job_spec(
        "ssh_job",
        {"main": {"commands": ["true"]}},
        extras={PLUGINS: [{"plugin": "ssh", "parameters": {"jobssh": True}}]},
    )
    r = await pai.post_job(spec)
    assert r.code == 201, r
    warnings = {w["path"]: w["message"] for w in r.json()["warnings"]}
    assert warnings[f"extras.{PLUGINS}.0"].startswith(
        "runtime plugin ssh is not supported on the local backend"
    )


async def test_invalid_plugin_parameters_are_a_400_naming_the_field(pai: PAIClient) -> None:
    spec = with_plugins("both_forms", ["true"], [])
    spec["prerequisites"][0]["preCommands"] = ["echo also"]
    r = await pai.post_job(spec)
    assert r.code == 400, r
    assert [e["path"] for e in r.json()["errors"]] == ["prerequisites.0.preCommands"]
    assert await pai.jobs() == []
