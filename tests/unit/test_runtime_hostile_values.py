"""Every value a job file gives a runtime plugin reaches bash as data, never as code.

Hostile values (command substitution, backticks, ``;``, newlines, quotes, backslashes, a
leading ``-``, markers whose name is shell code) go into every plugin parameter and every
marker position; the real task script is built for both backends (Kubernetes: the pod's
script, with ``<% $secrets.x %>`` as ``${PAI_SECRET_x}``) and run with bash. ``git``,
``tensorboard``, ``pip`` and ``bash`` (which runs the ssh plugin's sshd.sh) are stand-ins on
``PATH`` that record their arguments; the user's commands are ``true``. Nothing may create
the file the values try to ``touch``, and each tool must get the value as one literal
argument. Only ``commands``, the cmd plugin's commands and ``callbacks`` are code."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from jupyter_pai.backends.kubernetes.pods import role_script, secret_variables
from jupyter_pai.runtime import task_script
from jupyter_pai.spec import JobProtocol
from jupyter_pai.spec.templating import as_text, lookup

PWNED = "pwned"
HOSTILE = [
    "$(touch pwned)",
    "`touch pwned`",
    "; touch pwned",
    "\ntouch pwned\n",
    "$(touch${IFS}pwned)",
    "${IFS}",
    '"; touch pwned; "',
    "'; touch pwned; '",
    "'",
    '\\"; touch pwned; \\"',
    "\\$(touch pwned)",
    "--upload-pack=touch pwned",
    "-u touch pwned",
    "<% $secrets.$(touch${IFS}pwned) %>",
    "<% $secrets.$(touch pwned) %>",
    "<% $secrets.`touch${IFS}pwned` %>",
    "<% $secrets.${IFS} %>",
    "<% $secrets.token;touch${IFS}pwned %>",
    "<% $secrets.undeclared %>",
    "<% $parameters.x;touch pwned %>",
    "<% $parameters.$(touch${IFS}pwned) %>",
]
REPO = "https://example.com/team/repo.git"
ROLE = "main"
PLUGINS = "com.microsoft.pai.runtimeplugin"
BASH = shutil.which("bash") or "/bin/bash"
# Records each call's arguments (NUL-separated) in a file of its own.
SHIM = """#!/bin/sh
f="$HOSTILE_RECORD/{name}.$$.$(date +%s%N)"
for a in "$@"; do printf '%s\\0' "$a"; done >"$f.part"
mv "$f.part" "$f.rec"
"""
SHIMS = ("git", "tensorboard", "pip", "bash")


@dataclass(frozen=True)
class Position:
    """Where a hostile value goes, and what the tool called must receive."""

    name: str
    #: value → (extras plugin entries, extra top-level fields, role fields)
    build: Callable[[str], tuple[list[dict[str, Any]], dict[str, Any], dict[str, Any]]]
    tool: str | None = None
    #: value → the tool's expected arguments; None: the tool is not called
    expect: Callable[[str], list[str] | None] | None = None
    backends: tuple[str, ...] = ("local", "kubernetes")


def entry(plugin: str, **parameters: Any) -> list[dict[str, Any]]:
    return [{"plugin": plugin, "parameters": parameters}]


def tb_args(logdir: str) -> list[str]:
    return [logdir, "--port=6006"]


POSITIONS = [
    Position(
        "git.repo_uri",
        lambda v: (entry("git", repo_uri=v), {}, {}),
        "git",
        lambda v: ["clone", "--", v, "code"],
    ),
    Position(
        "git.clone_dir",
        lambda v: (entry("git", repo_uri=REPO, clone_dir=v), {}, {}),
        "git",
        lambda v: ["clone", "--", REPO, v],
    ),
    Position(
        "git.options value, quoted as OpenPAI's shell-like split reads it",
        lambda v: (
            entry("git", repo_uri=REPO, options=["--depth 1", "-b " + shlex.quote(v)]),
            {},
            {},
        ),
        "git",
        lambda v: ["clone", "--depth", "1", "-b", v, "--", REPO, "code"],
    ),
    Position(
        "git.options item, raw (refused: not a safe git clone option)",
        lambda v: (entry("git", repo_uri=REPO, options=["--single-branch", v]), {}, {}),
        "git",
        lambda v: None,
    ),
    Position(
        "git prerequisite.repo_uri",
        lambda v: (
            [],
            {
                "prerequisites": [
                    {"name": "src", "type": "script", "plugin": f"{PLUGINS}.git", "repo_uri": v}
                ]
            },
            {"prerequisites": ["src"]},
        ),
        "git",
        lambda v: ["clone", "--", v, "code"],
    ),
    Position(
        "tensorboard.logdir",
        lambda v: (entry("tensorboard", logdir=v), {}, {}),
        "tensorboard",
        lambda v: tb_args("--logdir=" + v),
    ),
    Position(
        "tensorboard.logdir.<name>",
        lambda v: (entry("tensorboard", logdir={"train": v, "eval": "/tmp/eval"}), {}, {}),
        "tensorboard",
        lambda v: tb_args(f"--logdir_spec=train:{v},eval:/tmp/eval"),
    ),
    Position(
        "tensorboard.logdir name",
        lambda v: (entry("tensorboard", logdir={v: "/tmp/x", "eval": "/tmp/eval"}), {}, {}),
        "tensorboard",
        lambda v: tb_args(f"--logdir_spec={v}:/tmp/x,eval:/tmp/eval"),
    ),
    Position(
        "tensorboard.port",
        lambda v: (entry("tensorboard", logdir="/tmp/x", port=v), {}, {}),
        "tensorboard",
        lambda v: tb_args("--logdir=/tmp/x"),
    ),
    Position(
        "ssh.userssh.value",
        lambda v: (entry("ssh", userssh={"type": "custom", "value": v}), {}, {}),
        "bash",
        lambda v: ["false", "custom", v],
        ("kubernetes",),
    ),
    Position(
        "ssh.userssh.type",
        lambda v: (entry("ssh", userssh={"type": v, "value": "ssh-ed25519 AAAA k"}), {}, {}),
        "bash",
        lambda v: ["false", v, "ssh-ed25519 AAAA k"],
        ("kubernetes",),
    ),
    Position(
        "ssh flags and timeout",
        lambda v: (
            entry(
                "ssh",
                jobssh=v,
                sshbarrier=v,
                sshbarrierTimeout=v,
                userssh={"type": "custom", "value": "k"},
            ),
            {},
            {},
        ),
        "bash",
        lambda v: ["false", "custom", "k"],
        ("kubernetes",),
    ),
    Position(
        "teamwise_storage.storageConfigNames",
        lambda v: (entry("teamwise_storage", storageConfigNames=[v]), {}, {}),
    ),
    Position(
        "cmd, a parameter that is not a command",
        lambda v: (entry("cmd", preCommands=["true"], notes=v), {}, {}),
    ),
    Position(
        "prerequisite plugin name",
        lambda v: (
            [],
            {"prerequisites": [{"name": "p", "type": "script", "plugin": f"{PLUGINS}.{v}"}]},
            {"prerequisites": ["p"]},
        ),
    ),
    Position(
        "extras plugin name",
        lambda v: ([{"plugin": v, "parameters": {"x": v}}], {}, {}),
    ),
    # Markers whose value is hostile: rendered values are data too.
    Position(
        "<% $parameters.p %> in git.repo_uri",
        lambda v: (entry("git", repo_uri="<% $parameters.p %>"), {"parameters": {"p": v}}, {}),
        "git",
        lambda v: ["clone", "--", v, "code"],
    ),
    Position(
        "<% $secrets.s %> in git.clone_dir",
        lambda v: (
            entry("git", repo_uri=REPO, clone_dir="dir-<% $secrets.s %>"),
            {"secrets": {"s": v}},
            {},
        ),
        "git",
        lambda v: ["clone", "--", REPO, "dir-" + v],
    ),
    Position(
        "<% $secrets.s %> in ssh.userssh.value",
        lambda v: (
            entry("ssh", userssh={"type": "custom", "value": "<% $secrets.s %>"}),
            {"secrets": {"s": v}},
            {},
        ),
        "bash",
        lambda v: ["false", "custom", v],
        ("kubernetes",),
    ),
    Position(
        "<% $data.uri %> in tensorboard.logdir",
        lambda v: (
            entry("tensorboard", logdir="<% $data.uri %>/logs"),
            {"prerequisites": [{"name": "d", "type": "data", "uri": v}]},
            {"data": "d"},
        ),
        "tensorboard",
        lambda v: tb_args(f"--logdir={v}/logs"),
    ),
]


def job_of(position: Position, value: str) -> JobProtocol:
    plugins, top, role = position.build(value)
    doc: dict[str, Any] = {
        "protocolVersion": 2,
        "name": "hostile",
        "type": "job",
        "secrets": {"token": "s3cr3t-token"},
        "taskRoles": {ROLE: {"commands": ["true"], **role}},
        "extras": {f"{PLUGINS}": plugins},
    }
    for key, val in top.items():
        doc[key] = {**doc[key], **val} if isinstance(doc.get(key), dict) else val
    return JobProtocol.model_validate(doc)


def script_and_env(job: JobProtocol, backend: str) -> tuple[str, dict[str, str]]:
    """The script a task runs on ``backend`` and the secrets' variables it needs."""
    if backend == "local":
        return task_script(job, ROLE, backend="local"), {}
    variables = secret_variables(job)
    env = {var: as_text(lookup(job.secrets, key)) for key, var in variables.items()}
    return role_script(job, ROLE, variables), env


def records(folder: Path, tool: str) -> list[list[str]]:
    return [p.read_bytes().decode().split("\0")[:-1] for p in sorted(folder.glob(f"{tool}.*.rec"))]


def run_task(
    script: str, tmp: Path, env: dict[str, str], wait_for: str | None
) -> tuple[subprocess.CompletedProcess[str], Path]:
    shims = tmp / "bin"
    record = tmp / "record"
    work = tmp / "work"
    for folder in (shims, record, work):
        folder.mkdir()
    for name in SHIMS:
        shim = shims / name
        shim.write_text(SHIM.format(name=name))
        shim.chmod(0o755)
    path = f"{shims}:{os.environ['PATH']}"
    # The real sshd.sh would edit the account's ~/.ssh: only the stand-in may run.
    assert shutil.which("bash", path=path) == str(shims / "bash")
    (tmp / "task.sh").write_text(script)
    done = subprocess.run(
        [BASH, str(tmp / "task.sh")],
        cwd=work,
        env={
            "PATH": path,
            "HOME": str(tmp),
            "HOSTILE_RECORD": str(record),
            "PAI_CURRENT_TASK_ROLE_CURRENT_TASK_INDEX": "0",
            "PAI_CONTAINER_HOST_tensorboard_PORT_LIST": "6006",
            "PAI_CONTAINER_HOST_IP": "127.0.0.1",
            **env,
        },
        capture_output=True,
        text=True,
        timeout=30,
    )
    if wait_for:  # tensorboard runs in the background
        deadline = time.monotonic() + 10
        while not list(record.glob(f"{wait_for}.*.rec")) and time.monotonic() < deadline:
            time.sleep(0.02)
    return done, record


@pytest.mark.parametrize("value", HOSTILE, ids=[repr(v) for v in HOSTILE])
@pytest.mark.parametrize("position", POSITIONS, ids=[p.name for p in POSITIONS])
def test_hostile_value_reaches_bash_as_data(position: Position, value: str, tmp_path: Path) -> None:
    job = job_of(position, value)
    for backend in position.backends:
        tmp = tmp_path / backend
        tmp.mkdir()
        script, env = script_and_env(job, backend)
        expected = position.expect(value) if position.expect else None
        done, record = run_task(script, tmp, env, position.tool if expected else None)
        created = [p for p in tmp.rglob(f"*{PWNED}*") if p.name == PWNED]
        assert not created, f"{backend}: a value ran as code\n{script}"
        if position.tool is None:
            continue
        calls = records(record, position.tool)
        if expected is None:
            assert calls == [], f"{backend}: {position.tool} ran with {calls}"
            assert done.returncode != 0, f"{backend}: a refused option must fail the task"
            continue
        assert done.returncode == 0, f"{backend}: {done.stderr}\n{script}"
        assert len(calls) == 1, f"{backend}: {calls}\n{done.stderr}"
        got = calls[0]
        if position.tool == "bash":  # bash -c <sshd.sh> sshd.sh ARGS
            assert got[:1] == ["-c"] and got[2] == "sshd.sh"
            got = got[3:]
        if position.tool == "tensorboard":  # then where it listens, which differs by backend
            got = got[:2]
        assert got == expected, f"{backend}\n{script}"


def test_every_plugin_is_covered() -> None:
    from jupyter_pai.runtime.plugins import PLUGINS as KNOWN

    for name in KNOWN:
        assert any(p.name.startswith(name) for p in POSITIONS), name
