"""Runtime plugin ssh without a cluster: the commands a task runs (golden), its scripts
(``bash -n``, and sshbarrier run against a stand-in ``ssh``), what is said at submission,
and the job's key pair, which only the job's Secret may hold (every flavor).

``UPDATE_GOLDEN=1`` rewrites ``golden/runtime/ssh.*``."""

from __future__ import annotations

import json
import os
import stat
import subprocess
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.serialization import load_ssh_private_key

from jupyter_pai.backends.kubernetes.flavors import FLAVORS
from jupyter_pai.backends.kubernetes.jobssh import (
    add_job_key,
    generate_key_pair,
    needs_job_key,
)
from jupyter_pai.backends.kubernetes.naming import make_names
from jupyter_pai.backends.kubernetes.pods import PodOptions
from jupyter_pai.errors import SpecError
from jupyter_pai.runtime import submission_warnings, task_script
from jupyter_pai.runtime.plugins import ssh
from jupyter_pai.spec import JobProtocol, parse_job
from tests.golden import check_golden as check_golden_file

GOLDEN = Path(__file__).parent / "golden" / "runtime"
ENTRY = "extras.com.microsoft.pai.runtimeplugin.0"

JOB = """
protocolVersion: 2
name: ssh-job
type: job
secrets: {key: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIDu0j5l user@laptop"}
taskRoles:
  master:
    commands: ['ssh worker-1 hostname']
  worker:
    instances: 2
    commands: ['echo work']
  monitor:
    commands: ['sleep 1']
extras:
  com.microsoft.pai.runtimeplugin:
    - plugin: ssh
      taskroles: [master, worker]
      parameters:
        jobssh: true
        sshbarrier: true
        sshbarrierTimeout: 3
        userssh: {type: custom, value: "<% $secrets.key %>"}
"""


def job_of(text: str = JOB) -> JobProtocol:
    return parse_job(text).job


def check_golden(name: str, text: str) -> None:
    check_golden_file(GOLDEN / name, text)


def test_task_script_golden() -> None:
    """sshd.sh with jobssh and the user's key (a secret: filled in from the Secret at run
    time), then sshbarrier.sh with the timeout; the role the entry leaves out runs neither."""
    job = job_of()
    script = task_script(job, "worker", backend="kubernetes", secrets=False)
    check_golden("ssh.worker.kubernetes.sh", script)
    assert "sshd.sh" not in task_script(job, "monitor", backend="kubernetes", secrets=False)
    # Nothing runs on the local backend (a warning says what it provides instead).
    assert "sshd" not in task_script(job, "worker", backend="local")


def test_openpai_parameter_rules() -> None:
    def pre(params: str, gang: str = "") -> str:
        text = JOB.replace(
            """        jobssh: true
        sshbarrier: true
        sshbarrierTimeout: 3
        userssh: {type: custom, value: "<% $secrets.key %>"}""",
            params,
        )
        return task_script(job_of(text + gang), "master", backend="kubernetes", secrets=False)

    assert "sshbarrier.sh" in pre("        {jobssh: 'True', sshbarrier: 'true'}")
    # The barrier needs jobssh; without a timeout it waits up to 1800 rounds (no argument).
    assert "sshbarrier.sh" not in pre("        {jobssh: false, sshbarrier: true}")
    assert pre("        {jobssh: true, sshbarrier: true}").rstrip().count("sshbarrier.sh\n") == 1
    # Nothing to do: no sshd (OpenPAI's "neither jobssh or userssh").
    assert "sshd.sh" not in pre("        {jobssh: false}")
    assert "sshd.sh false custom" not in pre("        {userssh: {type: custom, value: ''}}")
    assert '\' sshd.sh false "custom" "ssh-rsa A"' in pre(
        "        {userssh: {type: custom, value: ssh-rsa A}}"
    )
    # OpenPAI turns jobssh off without gang allocation.
    no_gang = pre("        {jobssh: true, sshbarrier: true}", "  gangAllocation: false\n")
    assert "' sshd.sh false" not in no_gang and "sshd.sh true" not in no_gang


def test_errors_and_warnings_at_submission() -> None:
    with pytest.raises(SpecError) as refused:  # refused wherever a job is parsed
        job_of(JOB.replace("sshbarrierTimeout: 3", "sshbarrierTimeout: 1.5"))
    assert [(e.path, e.message) for e in refused.value.errors] == [
        (
            f"{ENTRY}.parameters.sshbarrierTimeout",
            "runtime plugin ssh: must be a whole number of minutes",
        )
    ]
    assert submission_warnings(job_of(), "kubernetes") == []
    (local,) = submission_warnings(job_of(), "local")
    assert (local.path, local.message) == (
        ENTRY,
        "runtime plugin ssh is not supported on the local backend: no sshd starts and there "
        "are no <role>-<index> host names; every task runs on this machine as you, so a peer "
        "is reachable at 127.0.0.1 (PAI_HOST_IP_<role>_<index>) on its ports "
        "(PAI_PORT_LIST_<role>_<index>_<label>, ssh among them, free for a server of your "
        "own); it is ignored",
    )
    odd = job_of(JOB.replace("type: custom", "type: system") + "  gangAllocation: false\n")
    found = {w.path: w.message for w in submission_warnings(odd, "kubernetes")}
    assert set(found) == {
        f"{ENTRY}.parameters.jobssh",
        f"{ENTRY}.parameters.sshbarrier",
        f"{ENTRY}.parameters.userssh.type",
    }
    assert "extras.gangAllocation is false" in found[f"{ENTRY}.parameters.jobssh"]
    assert "userssh type 'system' is not supported" in found[f"{ENTRY}.parameters.userssh.type"]
    idle = job_of(JOB.replace("jobssh: true", "jobssh: false").replace("type: custom", "x: y"))
    assert [w.message for w in submission_warnings(idle, "kubernetes")] == [
        "runtime plugin ssh: sshbarrier needs jobssh, so no barrier runs",
        "runtime plugin ssh: neither jobssh nor userssh (with type and value) is set, so no "
        "sshd starts",
    ]


def test_scripts_parse() -> None:
    for name in ("sshd.sh", "sshbarrier.sh"):
        subprocess.run(["bash", "-n", str(ssh.SCRIPTS / name)], check=True)
        subprocess.run(["bash", "-n", "-c", ssh.script_text(name)], check=True)


def _barrier(tmp_path: Path, ssh_body: str, *args: str) -> subprocess.CompletedProcess[str]:
    """sshbarrier.sh as master-0 of master:0,worker:0,worker:1, with ``ssh`` a stand-in."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    fake = bin_dir / "ssh"
    fake.write_text(f'#!/bin/bash\necho "$@" >>"{tmp_path}/calls"\n{ssh_body}\n')
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    env = {
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "PAI_TASK_ROLE_INSTANCES": "master:0,worker:0,worker:1",
        "PAI_CURRENT_TASK_ROLE_NAME": "master",
        "PAI_CURRENT_TASK_ROLE_CURRENT_TASK_INDEX": "0",
        "SSHBARRIER_RETRY_INTERVAL": "1",
    }
    return subprocess.run(
        ["bash", "-c", ssh.script_text("sshbarrier.sh"), "sshbarrier.sh", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
    )


def test_sshbarrier_waits_for_every_other_task(tmp_path: Path) -> None:
    # worker-1 answers from the second round on.
    body = f'[[ "$*" != *worker-1* ]] || [ -e "{tmp_path}/seen" ] || {{ touch "{tmp_path}/seen"; exit 255; }}'
    done = _barrier(tmp_path, body, "1")
    assert done.returncode == 0, done.stderr
    assert "All ssh connections are established, continue..." in done.stdout
    calls = (tmp_path / "calls").read_text().splitlines()
    hosts = [c.split()[-3] for c in calls]
    assert hosts == ["worker-0", "worker-1", "worker-1"]  # never itself; only who failed
    assert calls[0].startswith("-q -o BatchMode=yes -o StrictHostKeyChecking=no")
    assert calls[0].endswith("worker-0 exit 0")


def test_sshbarrier_times_out_with_exit_10_and_openpais_message(tmp_path: Path) -> None:
    # Timeout 0 minutes: one round, no retry (OpenPAI's MAX_RETRY_COUNT = 0).
    failed = _barrier(tmp_path, "exit 255", "0")
    assert failed.returncode == 10
    assert failed.stderr.startswith(
        "SSH barrier reaches max retry count. Failed instances: worker-0 worker-1"
    )


def test_key_pair_only_in_the_secret_for_every_flavor() -> None:
    job = job_of()
    names = make_names(job, "alice")
    assert needs_job_key(job)
    pair = generate_key_pair("jupyter-pai job alice~ssh-job")
    assert "PRIVATE" not in repr(pair)
    key = load_ssh_private_key(pair.private.encode(), password=None)
    assert pair.public.startswith("ssh-ed25519 ") and pair.public.endswith(" alice~ssh-job")
    assert key is not None
    body = pair.private.splitlines()[1]  # a line of the key itself
    options = PodOptions(namespace="alice")
    for flavor in sorted(FLAVORS):
        built = FLAVORS[flavor](options).build(job, names)
        assert body not in json.dumps(built.objects)  # builders never see it
        add_job_key(built.objects, names, pair)
        secrets = [o for o in built.objects if o["kind"] == "Secret"]
        assert len(secrets) == 1, flavor
        data = secrets[0]["stringData"]
        assert data[ssh.PRIVATE_KEY_VAR] == pair.private, flavor
        assert data[ssh.PUBLIC_KEY_VAR] == pair.public, flavor
        others = [o for o in built.objects if o["kind"] != "Secret"]
        assert body not in json.dumps(others) and pair.public not in json.dumps(others), flavor
        # Tasks of the roles that use it read it from the Secret, the others not at all.
        dump = json.dumps(others)
        # Per-role templates: master and worker; per-pod flavors: master-0, worker-0, worker-1.
        assert dump.count('"key": "PAI_JOB_SSH_PRIVATE_KEY"') in (2, 3), flavor
        assert "export -n PAI_JOB_SSH_PRIVATE_KEY" in dump, flavor


def test_no_secret_without_jobssh() -> None:
    text = JOB.replace("jobssh: true", "jobssh: false").replace('"<% $secrets.key %>"', "ssh-rsa A")
    text = "\n".join(line for line in text.splitlines() if not line.startswith("secrets:"))
    job = job_of(text)
    assert not needs_job_key(job)
    built = FLAVORS["native"](PodOptions(namespace="alice")).build(job, make_names(job, "alice"))
    assert [o for o in built.objects if o["kind"] == "Secret"] == []
    dump = json.dumps(built.objects)
    assert "sshd.sh false" in dump  # userssh alone still starts sshd
    assert "secretKeyRef" not in dump and "export -n" not in dump


@pytest.mark.parametrize("flavor", ["native"])
def test_add_job_key_needs_the_secret(flavor: str) -> None:
    job = job_of(JOB.replace("jobssh: true", "jobssh: false"))
    names = make_names(job, "alice")
    objects = [
        o
        for o in FLAVORS[flavor](PodOptions(namespace="alice")).build(job, names).objects
        if o["kind"] != "Secret"
    ]
    with pytest.raises(ValueError, match="has no Secret"):
        add_job_key(objects, names, generate_key_pair("c"))
