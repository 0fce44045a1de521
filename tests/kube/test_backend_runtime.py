"""OpenPAI's runtime plugins on the real control plane (native flavor, pods on the runner
node as processes): ``cmd`` pre/post commands and a prerequisite's callbacks in OpenPAI's
order, a failing pre command failing the task, and TensorBoard serving on its declared
port (the ``port`` given, as the task's ``tensorboard`` port)."""

from __future__ import annotations

import socket

import pytest

from jupyter_pai.backends.kubernetes import KubernetesBackend
from jupyter_pai.backends.models import JobState
from jupyter_pai.spec import parse_job
from tests.httpwait import wait_for_http_ok
from tests.kube.test_backend_jobs import read_log, wait_for

pytestmark = pytest.mark.kube

CMD_JOB = """
protocolVersion: 2
name: {name}
type: job
secrets: {{word: open-sesame}}
prerequisites:
  - name: setup
    type: script
    plugin: com.microsoft.pai.runtimeplugin.cmd
    callbacks:
      - {{event: taskStarts, commands: ['echo step callback-start']}}
      - {{event: taskSucceeds, commands: ['echo step callback-end']}}
taskRoles:
  main:
    prerequisites: [setup]
    resourcePerInstance: {{cpu: 1, memoryMB: 128}}
    commands: ['echo step user']
extras:
  com.microsoft.pai.runtimeplugin:
    - plugin: cmd
      parameters:
        preCommands: {pre}
        postCommands: ['echo step cmd-post <% $secrets.word %>']
"""


def steps(log: str) -> list[str]:
    return [line.split(" ", 1)[1] for line in log.splitlines() if line.startswith("step ")]


async def test_cmd_and_callbacks_run_in_openpai_order(backend: KubernetesBackend) -> None:
    job = parse_job(CMD_JOB.format(name="cmd-order", pre="['echo step cmd-pre']")).job
    submitted = await backend.submit(job)
    done = await wait_for(backend, submitted.id, lambda d: d.state.terminal, 60)
    assert done.state == JobState.SUCCEEDED, done
    log = await read_log(backend, done.id, "main", 0)
    assert steps(log) == [
        "callback-start",
        "cmd-pre",
        "user",
        "cmd-post ******",  # the secret came from the job's Secret, and logs redact it
        "callback-end",
    ], log
    assert "[jupyter-pai] runtime plugin cmd (prerequisites.0): taskStarts" in log
    assert list(done.tasks[0].ports) == ["ssh", "http"]


async def test_a_failing_pre_command_fails_the_task(backend: KubernetesBackend) -> None:
    pre = "['echo step cmd-pre', 'exit 6']"
    submitted = await backend.submit(parse_job(CMD_JOB.format(name="pre-fails", pre=pre)).job)
    done = await wait_for(backend, submitted.id, lambda d: d.state.terminal, 60)
    assert done.state == JobState.FAILED and done.exit_code == 6
    assert steps(await read_log(backend, done.id, "main", 0)) == ["callback-start", "cmd-pre"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_tensorboard_serves_on_its_declared_port(backend: KubernetesBackend) -> None:
    port = _free_port()  # pods on the runner share this machine's ports
    spec = f"""
protocolVersion: 2
name: tensorboard
type: job
taskRoles:
  chief:
    resourcePerInstance: {{cpu: 1, memoryMB: 256}}
    commands: ['mkdir -p logs', 'sleep 300']
extras:
  com.microsoft.pai.runtimeplugin:
    - plugin: tensorboard
      parameters: {{port: {port}, logdir: {{run: logs}}}}
"""
    job = parse_job(spec).job
    assert backend.submission_warnings(job) == []  # the port given is the port used
    submitted = await backend.submit(job)
    running = await wait_for(backend, submitted.id, lambda d: d.state == JobState.RUNNING, 60)
    task = running.tasks[0]
    assert task.ports["tensorboard"] == [port] and list(task.ports) == [
        "tensorboard",
        "ssh",
        "http",
    ]
    url = f"http://{task.ip}:{port}/"
    status = await wait_for_http_ok(url, 90)
    assert status == 200, await read_log(backend, running.id, "chief", 0)
    await backend.stop_job(running.id)


# The `backend` fixture (a started backend in namespace alice, cleaned up around the test).
from tests.kube.test_backend_jobs import backend  # noqa: E402

__all__ = ["backend"]
