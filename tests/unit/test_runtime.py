"""Runtime plugins and the task script (pure, plus the scripts run in bash): which plugins a
role runs and in what order, the scripts both backends write (golden files under
``golden/runtime/``, ``UPDATE_GOLDEN=1`` rewrites them), what happens when a part fails,
and the errors and warnings given at submission."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from jupyter_pai.runtime import (
    plugin_errors,
    plugin_ports,
    plugin_uses,
    submission_warnings,
    task_script,
)
from jupyter_pai.spec import JobProtocol, load_document, parse_job
from tests.golden import check_golden as check_golden_file

GOLDEN = Path(__file__).parent / "golden" / "runtime"
PLUGINS = "extras.com.microsoft.pai.runtimeplugin"

JOB = """
protocolVersion: 2
name: plugins
type: job
parameters: {greeting: hello, logs: /tmp/tb}
secrets: {token: s3cr3t-token}
prerequisites:
  - name: corpus
    type: data
    uri: [/data/corpus-a, /data/corpus-b]
  - name: setup
    type: script
    plugin: com.microsoft.pai.runtimeplugin.cmd
    callbacks:
      - event: taskStarts
        commands: ['echo "setup starts with $DATA_URI <% $data.uri[0] %>"']
      - event: taskSucceeds
        commands: ['echo "setup done"']
  - name: notes
    type: script
    plugin: com.microsoft.pai.runtimeplugin.cmd
    failurePolicy: ignore
    callbacks:
      - {event: taskStarts, commands: ['echo notes-start', 'false', 'echo notes-after-false']}
taskRoles:
  trainer:
    instances: 2
    data: corpus
    prerequisites: [notes, setup]
    commands: ['echo "user <% $parameters.greeting %>"']
  evaluator:
    commands: ['echo evaluate']
extras:
  com.microsoft.pai.runtimeplugin:
    - plugin: cmd
      parameters:
        preCommands: ['echo "cmd pre <% $parameters.greeting %>"']
        postCommands: ['echo "cmd post token=<% $secrets.token %>"']
    - plugin: git
      taskroles: [evaluator]
      parameters:
        repo_uri: 'https://ci:<% $secrets.token %>@example.com/team/repo.git'
        options: ['--depth 1', '--branch main']
        clone_dir: 'src dir'
    - plugin: tensorboard
      parameters: {port: 6006, logdir: {train: '<% $parameters.logs %>/train', eval: /tmp/eval}}
    - plugin: cmd
      taskroles: [trainer]
      failurePolicy: ignore
      parameters: {postCommands: ['echo last-plugin-post']}
"""


def job_of(text: str = JOB) -> JobProtocol:
    """The job as the model reads it: parse_job would refuse the invalid plugin settings
    some tests hand to plugin_errors themselves."""
    return JobProtocol.model_validate(load_document(text))


def check_golden(name: str, text: str) -> None:
    check_golden_file(GOLDEN / name, text)


@pytest.mark.parametrize("backend", ["local", "kubernetes"])
@pytest.mark.parametrize("role", ["trainer", "evaluator"])
def test_task_script_golden(backend: str, role: str) -> None:
    secrets = backend == "local"
    script = task_script(job_of(), role, backend=backend, secrets=secrets)
    check_golden(f"plugins.{role}.{backend}.sh", script)


def test_plugins_in_openpai_order_with_parameters_rendered_for_the_role() -> None:
    job = job_of()
    uses = plugin_uses(job, "trainer")
    # The role's prerequisites in its own order, then the extras entries that apply to it.
    assert [(u.name, u.path) for u in uses] == [
        ("cmd", "prerequisites.2"),
        ("cmd", "prerequisites.1"),
        ("cmd", f"{PLUGINS}.0"),
        ("tensorboard", f"{PLUGINS}.2"),
        ("cmd", f"{PLUGINS}.3"),
    ]
    assert [u.failure_policy for u in uses] == ["ignore", "fail", "fail", "fail", "ignore"]
    setup = uses[1].parameters
    # Parameters are the prerequisite minus plugin / failurePolicy / type, as OpenPAI's.
    assert {"name", "callbacks"} <= set(setup) and "plugin" not in setup and "type" not in setup
    assert setup["callbacks"][0]["commands"] == [
        'echo "setup starts with $DATA_URI /data/corpus-a"'
    ]
    assert uses[2].parameters["postCommands"] == ['echo "cmd post token=s3cr3t-token"']
    kept = plugin_uses(job, "trainer", secrets=False)[2].parameters["postCommands"]
    assert kept == ['echo "cmd post token=<% $secrets.token %>"']
    assert [u.path for u in plugin_uses(job, "evaluator")] == [
        f"{PLUGINS}.0",
        f"{PLUGINS}.1",
        f"{PLUGINS}.2",
    ]


def run(script: str, tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "task.sh"
    path.write_text(script)
    return subprocess.run(
        ["bash", str(path)],
        cwd=tmp_path,
        env={"PATH": os.environ["PATH"], **env},
        capture_output=True,
        text=True,
        timeout=30,
    )


def cmd_job(commands: list[str], *, pre: list[str], post: list[str], policy: str = "fail") -> str:
    return f"""
protocolVersion: 2
name: cmdjob
type: job
prerequisites:
  - name: cb
    type: script
    plugin: com.microsoft.pai.runtimeplugin.cmd
    callbacks:
      - {{event: taskStarts, commands: ['echo callback-start']}}
      - {{event: taskSucceeds, commands: ['echo callback-end']}}
taskRoles:
  main:
    prerequisites: [cb]
    commands: {commands!r}
extras:
  com.microsoft.pai.runtimeplugin:
    - plugin: cmd
      failurePolicy: {policy}
      parameters: {{preCommands: {pre!r}, postCommands: {post!r}}}
"""


def test_parts_run_in_order_post_ones_reversed(tmp_path: Path) -> None:
    job = job_of(cmd_job(["echo user"], pre=["echo cmd-pre"], post=["echo cmd-post"]))
    done = run(task_script(job, "main", backend="local"), tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["callback-start", "cmd-pre", "user", "cmd-post", "callback-end"]
    assert "[jupyter-pai] runtime plugin cmd (prerequisites.0): taskStarts" in done.stderr


def test_a_failing_pre_command_fails_the_task_with_its_code(tmp_path: Path) -> None:
    job = job_of(cmd_job(["echo user"], pre=["echo cmd-pre", "exit 3", "echo never"], post=[]))
    done = run(task_script(job, "main", backend="local"), tmp_path)
    assert done.returncode == 3
    assert done.stdout.split() == ["callback-start", "cmd-pre"]


def test_ignore_policy_goes_on_after_a_failing_pre_command(tmp_path: Path) -> None:
    job = job_of(
        cmd_job(["echo user"], pre=["exit 3"], post=["false", "echo post-after"], policy="ignore")
    )
    done = run(task_script(job, "main", backend="local"), tmp_path)
    assert done.returncode == 0
    assert done.stdout.split() == ["callback-start", "user", "post-after", "callback-end"]
    assert "taskStarts failed (exit 3); ignored (failurePolicy: ignore)" in done.stderr


def test_post_commands_run_only_when_the_user_commands_succeed(tmp_path: Path) -> None:
    job = job_of(cmd_job(["echo user", "exit 5"], pre=[], post=["echo cmd-post"]))
    done = run(task_script(job, "main", backend="local"), tmp_path)
    assert done.returncode == 5
    assert done.stdout.split() == ["callback-start", "user"]
    # ``exit 0`` ends the user's commands, not the task: OpenPAI's user.sh is its own process.
    job = job_of(cmd_job(["echo user", "exit 0", "echo never"], pre=[], post=["echo cmd-post"]))
    done = run(task_script(job, "main", backend="local"), tmp_path)
    assert done.returncode == 0
    assert done.stdout.split() == ["callback-start", "user", "cmd-post", "callback-end"]


def test_a_failing_post_command_fails_the_task(tmp_path: Path) -> None:
    job = job_of(cmd_job(["echo user"], pre=[], post=["exit 4"]))
    done = run(task_script(job, "main", backend="local"), tmp_path)
    assert done.returncode == 4
    assert done.stdout.split() == ["callback-start", "user"]


def test_work_dir_and_pipefail(tmp_path: Path) -> None:
    job = job_of(
        cmd_job(['echo "wd=$PAI_WORK_DIR"', "false | true", "echo never"], pre=[], post=[])
    )
    done = run(task_script(job, "main", backend="local"), tmp_path)
    assert done.returncode == 1
    assert f"wd={tmp_path}" in done.stdout and "never" not in done.stdout


def test_git_clones_into_the_working_directory_and_refuses_a_non_empty_one(
    tmp_path: Path,
) -> None:
    repo = tmp_path / "origin.git"
    seed = tmp_path / "seed"
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"]
    subprocess.run([*git, "init", "-q", str(seed)], check=True)
    (seed / "train.py").write_text("print('cloned')\n")
    subprocess.run([*git, "-C", str(seed), "add", "."], check=True)
    subprocess.run([*git, "-C", str(seed), "commit", "-qm", "x"], check=True)
    subprocess.run([*git, "clone", "-q", "--bare", str(seed), str(repo)], check=True)
    text = f"""
protocolVersion: 2
name: gitjob
type: job
taskRoles:
  main: {{commands: ['python code/train.py']}}
extras:
  com.microsoft.pai.runtimeplugin:
    - {{plugin: git, parameters: {{repo_uri: '{repo}', options: ['--depth 1']}}}}
"""
    work = tmp_path / "work"
    work.mkdir()
    script = task_script(job_of(text), "main", backend="local")
    done = run(script, work)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "cloned" and (work / "code" / ".git").is_dir()
    again = run(script, work)
    assert again.returncode != 0
    assert "already exists and is not an empty directory" in again.stderr


def test_errors_name_the_field() -> None:
    both = job_of(
        JOB.replace(
            "    callbacks:\n      - event: taskStarts\n        commands: ['echo \"setup",
            "    preCommands: [x]\n    callbacks:\n      - event: taskStarts\n"
            "        commands: ['echo \"setup",
        )
    )
    assert [str(e) for e in plugin_errors(both)] == [
        "prerequisites.1.preCommands: runtime plugin cmd: give either callbacks or "
        "preCommands, not both (OpenPAI's cmd plugin fails on both)"
    ]
    bad = job_of(
        JOB.replace("repo_uri: 'https://ci:<% $secrets.token %>@example.com/team/repo.git'", "")
        .replace(
            "port: 6006, logdir: {train: '<% $parameters.logs %>/train', eval: /tmp/eval}",
            "port: x",
        )
        .replace("preCommands: ['echo \"cmd pre <% $parameters.greeting %>\"']", "preCommands: 7")
    )
    assert [e.path for e in plugin_errors(bad)] == [
        f"{PLUGINS}.0.parameters.preCommands",
        f"{PLUGINS}.1.parameters.repo_uri",
        f"{PLUGINS}.2.parameters.logdir",
        f"{PLUGINS}.2.parameters.port",
    ]


def warnings(job: JobProtocol, backend: str) -> dict[str, str]:
    return {w.path: w.message for w in submission_warnings(job, backend)}


def test_submission_warnings_per_backend() -> None:
    extra: dict[str, Any] = {
        "ssh": {"jobssh": True},
        "teamwise_storage": {"storageConfigNames": ["PAI_SHARE"]},
        "horovod": {},
    }
    text = JOB + "".join(
        f"    - {{plugin: {name}, parameters: {params!r}}}\n" for name, params in extra.items()
    )
    job = job_of(text)
    local, kube = warnings(job, "local"), warnings(job, "kubernetes")
    assert local[f"{PLUGINS}.2.parameters.port"] == (
        "runtime plugin tensorboard: the local backend gives TensorBoard a free port "
        "instead of 6006; the task's ports list it as 'tensorboard'"
    )
    assert f"{PLUGINS}.2.parameters.port" not in kube  # Kubernetes uses the port given
    # ssh runs on Kubernetes (tests/unit/test_runtime_ssh.py), not on the local backend.
    assert local[f"{PLUGINS}.4"].startswith(
        "runtime plugin ssh is not supported on the local backend"
    )
    assert f"{PLUGINS}.4" not in kube
    for found in (local, kube):
        assert "deprecated in OpenPAI" in found[f"{PLUGINS}.5"]
        assert found[f"{PLUGINS}.6.plugin"].startswith("unknown runtime plugin 'horovod'")
    assert len(kube) == 2 and len(local) == 4


def test_tensorboard_left_out_of_the_first_role_never_starts() -> None:
    job = job_of(
        JOB.replace(
            "    - plugin: tensorboard\n",
            "    - plugin: tensorboard\n      taskroles: [evaluator]\n",
        )
    )
    assert "never starts" in warnings(job, "kubernetes")[f"{PLUGINS}.2"]
    assert "tensorboard" not in task_script(job, "evaluator", backend="kubernetes")


def test_tensorboard_without_parameters_is_skipped_as_on_openpai() -> None:
    # OpenPAI's own runtime test job lists `- plugin: tensorboard` with nothing else.
    text = MINIMAL_PLUGIN_JOB.format(plugin="tensorboard")
    job = parse_job(text).job  # accepted, not refused
    assert "does not start" in warnings(job, "local")[f"{PLUGINS}.0"]
    assert "tensorboard" not in plugin_ports(job, "main")
    assert "tensorboard" not in task_script(job, "main", backend="kubernetes")


MINIMAL_PLUGIN_JOB = """
protocolVersion: 2
name: bare
type: job
taskRoles:
  main: {{commands: [echo hi]}}
extras:
  com.microsoft.pai.runtimeplugin:
    - plugin: {plugin}
"""


def test_git_on_several_local_tasks_warns_that_they_share_the_directory() -> None:
    job = job_of(JOB.replace("taskroles: [evaluator]", "taskroles: [trainer]"))
    assert "share one working directory" in warnings(job, "local")[f"{PLUGINS}.1"]
    assert f"{PLUGINS}.1" not in warnings(job, "kubernetes")
