"""Runtime plugin ssh on the real control plane (once per flavor; pods on the runner node as
processes, each with a private ``~/.ssh`` and its sshd on its own pod IP): tasks reach each
other as ``<role>-<index>`` after ``sshbarrier``, sessions see the peer's environment, the
job's private key is only in its Secret, and a barrier that cannot be passed fails the
task with exit 10 and OpenPAI's message."""

from __future__ import annotations

import base64
import json

import pytest
from kubernetes import client

from jupyter_pai.backends.kubernetes import KubernetesBackend
from jupyter_pai.backends.kubernetes.naming import make_names
from jupyter_pai.backends.models import JobState
from jupyter_pai.runtime.plugins.ssh import PRIVATE_KEY_VAR, PUBLIC_KEY_VAR
from jupyter_pai.spec import parse_job
from tests.cluster.pytest_plugin import TestCluster
from tests.kube.test_backend_jobs import NS, read_log, wait_for

pytestmark = pytest.mark.kube

# Each task asks every other task for its name over ssh, then stays up until every peer
# has asked it (a peer's `asked` file exists, or the peer is gone: it had seen them all).
# master decides the job (the workers' successes do not: minSucceededInstances -1), and a
# task still running when the job is decided is stopped, with its log on volcano (its
# CompleteJob deletes running pods): so master ends last, once no worker answers ssh.
ASK = r"""
me="$PAI_CURRENT_TASK_ROLE_NAME-$PAI_CURRENT_TASK_ROLE_CURRENT_TASK_INDEX"
peers=$(echo "$PAI_TASK_ROLE_INSTANCES" | tr , '\n' | tr : - | grep -vx "$me")
for p in $peers; do
  echo "$me asked $p: $(ssh "$p" 'echo $PAI_CURRENT_TASK_ROLE_NAME-$PAI_CURRENT_TASK_ROLE_CURRENT_TASK_INDEX')"
done
echo "$me has the private key in its environment: $(env | grep -c '^PAI_JOB_SSH_PRIVATE_KEY=')"
touch "$HOME/asked"
for p in $peers; do
  while ssh "$p" 'test -e "$HOME/asked"' 2>/dev/null; [ $? = 1 ]; do sleep 0.3; done
done
if [ "$PAI_CURRENT_TASK_ROLE_NAME" = master ]; then
  for p in $peers; do while ssh "$p" true 2>/dev/null; do sleep 0.3; done; done
  sleep 1
fi
"""

SSH_JOB = """
protocolVersion: 2
name: {name}
type: job
taskRoles:
  master:
    resourcePerInstance: {{cpu: 1, memoryMB: 256}}
    commands: {commands}
  worker:
    instances: 2
    resourcePerInstance: {{cpu: 1, memoryMB: 256}}
    completion: {{minSucceededInstances: -1}}
    commands: {worker}
extras:
  com.microsoft.pai.runtimeplugin:
    - plugin: ssh
      taskroles: {taskroles}
      parameters: {{jobssh: true, sshbarrier: true, sshbarrierTimeout: {timeout}}}
"""


def ssh_job(name: str, *, worker: str = "", taskroles: str = "[master, worker]", timeout: int = 2):
    commands = json.dumps([ASK])
    return parse_job(
        SSH_JOB.format(
            name=name,
            commands=commands,
            worker=json.dumps([worker]) if worker else commands,
            taskroles=taskroles,
            timeout=timeout,
        )
    ).job


async def test_tasks_reach_each_other_by_role_and_index_after_the_barrier(
    backend: KubernetesBackend, kube_cluster: TestCluster
) -> None:
    job = ssh_job("ssh-peers")
    submitted = await backend.submit(job)
    done = await wait_for(backend, submitted.id, lambda d: d.state.terminal, 120)
    logs = {
        f"{t.role}-{t.index}": await read_log(backend, done.id, t.role, t.index) for t in done.tasks
    }
    assert done.state == JobState.SUCCEEDED, (done, logs)
    for me, log in logs.items():
        assert "All ssh connections are established, continue..." in log, log
        assert "sshd listens on 127." in log, log
        answers = sorted(line for line in log.splitlines() if line.startswith(f"{me} asked "))
        peers = sorted(set(logs) - {me})
        assert answers == [f"{me} asked {p}: {p}" for p in peers], log
        # sshd.sh alone got it: not the user's commands (`export -n` in the task script).
        assert f"{me} has the private key in its environment: 0" in log, log

    # The private key is in the job's Secret and nowhere else: no other object of the job,
    # no API answer, no event, no log.
    names = make_names(job, "alice")
    api = kube_cluster.api()
    core, batch = client.CoreV1Api(api), client.BatchV1Api(api)
    secret = core.read_namespaced_secret(names.secret, NS)
    private = base64.b64decode(secret.data[PRIVATE_KEY_VAR]).decode()
    public = base64.b64decode(secret.data[PUBLIC_KEY_VAR]).decode()
    assert private.startswith("-----BEGIN OPENSSH PRIVATE KEY-----")
    assert public.startswith("ssh-ed25519 ") and public.endswith(" jupyter-pai job alice~ssh-peers")
    body = private.splitlines()[1]
    selector = f"jupyter-pai.io/job={names.base}"
    objects = [
        *core.list_namespaced_pod(NS, label_selector=selector).items,
        *core.list_namespaced_config_map(NS, label_selector=selector).items,
        *core.list_namespaced_service(NS, label_selector=selector).items,
        *batch.list_namespaced_job(NS, label_selector=selector).items,
        *core.list_namespaced_event(NS).items,
    ]
    dumped = json.dumps([api.sanitize_for_serialization(o) for o in objects])
    assert len(objects) >= 7 and names.secret in dumped  # pods name it in secretKeyRef
    answers = [
        json.dumps((await backend.get_job(done.id)).to_json()),
        json.dumps([e.__dict__ for e in await backend.events(done.id)], default=str),
        *logs.values(),
    ]
    for text in [dumped, *answers]:
        assert body not in text and "PRIVATE KEY" not in text


async def test_a_barrier_nobody_answers_fails_the_task_with_exit_10(
    backend: KubernetesBackend,
) -> None:
    # Only master runs the plugin: the workers start no sshd, so its barrier (0 minutes: a
    # single round) fails at once.
    job = ssh_job("ssh-barrier", worker="sleep 60", taskroles="[master]", timeout=0)
    submitted = await backend.submit(job)
    done = await wait_for(backend, submitted.id, lambda d: d.state.terminal, 90)
    assert done.state == JobState.FAILED, done
    master = next(t for t in done.tasks if t.role == "master")
    assert master.exit_code == 10, done
    log = await read_log(backend, done.id, "master", 0)
    assert (
        "SSH barrier reaches max retry count. Failed instances: worker-0 worker-1 Exit..." in log
    ), log
    assert "asked" not in log


# The `backend` fixture (a started backend in namespace alice, cleaned up around the test).
from tests.kube.test_backend_jobs import backend  # noqa: E402

__all__ = ["backend"]
