"""``ssh``: task-to-task ssh as OpenPAI's plugin gives it (``jobssh``: one key pair per job
and ``Host <role>-<index>`` entries for every task; ``userssh``: the user's public keys;
``sshbarrier``: wait until every other task answers ``ssh <role>-<index> exit 0``).

On Kubernetes each task runs ``sshd.sh`` and ``sshbarrier.sh`` (shell files next to this
module, embedded in the task's script: the pod needs no ConfigMap or volume, and the test
cluster's pod runner, which mounts no ConfigMaps, runs them as they are). The image brings
the OpenSSH server and client, as OpenPAI expects (its runtime apt-installs them; ours
installs nothing). The job's key pair comes from the job's Secret as
:data:`PRIVATE_KEY_VAR` / :data:`PUBLIC_KEY_VAR`; the Kubernetes backend makes it at
submission (``backends/kubernetes/jobssh.py``).

On the local backend every task is a process of the user on this machine, so nothing runs:
a warning says how peers are reached instead.
"""

from __future__ import annotations

import shlex
from functools import cache
from pathlib import Path
from typing import Any

from ...errors import FieldError
from ...spec.pluginparams.ssh import minutes
from ...spec.pluginparams.uses import PluginUse, plugin_uses
from ...spec.protocol import JobProtocol
from ..shell import shell_word
from .base import KUBERNETES, Plugin, Sections

PRIVATE_KEY_VAR = "PAI_JOB_SSH_PRIVATE_KEY"
PUBLIC_KEY_VAR = "PAI_JOB_SSH_PUBLIC_KEY"
SCRIPTS = Path(__file__).parent
USERSSH_TYPES = ("custom",)


@cache
def script_text(name: str) -> str:
    """``sshd.sh`` or ``sshbarrier.sh`` without its comment lines (they are read in the
    package; every pod spec carries the script)."""
    lines = (SCRIPTS / name).read_text().splitlines()
    return "\n".join(line for line in lines if not line.lstrip().startswith("#")) + "\n"


def _true(value: Any) -> bool:
    # OpenPAI's test: str(value).lower() == "true" (so True and "True" count, "yes" not).
    return str(value).lower() == "true"


def _userssh(p: dict[str, Any]) -> tuple[str, str] | None:
    """(type, keys) as OpenPAI passes them to sshd.sh: only with a type and a key."""
    userssh = p.get("userssh")
    if not isinstance(userssh, dict):
        return None
    value = userssh.get("value")
    kind = userssh.get("type")
    if kind is None or value is None or value == "":
        return None
    return str(kind), str(value)


def job_ssh(use: PluginUse, job: JobProtocol) -> bool:
    """Whether this entry gives its role the job's key pair and host entries; OpenPAI turns
    ``jobssh`` off without gang allocation."""
    return job.gang_allocation and _true(use.parameters.get("jobssh"))


def uses_job_key(job: JobProtocol, role: str) -> bool:
    """Whether tasks of ``role`` need the job's key pair."""
    return any(
        u.name == Ssh.name and job_ssh(u, job) for u in plugin_uses(job, role, secrets=False)
    )


def _run(name: str, args: list[str]) -> str:
    """One line that runs the packaged script ``name`` with ``args`` in its own bash."""
    return " ".join(["bash", "-c", shlex.quote(script_text(name)), name, *args])


class Ssh(Plugin):
    name = "ssh"
    backends = frozenset({KUBERNETES})

    def warnings(self, use: PluginUse, job: JobProtocol, backend: str) -> list[FieldError]:
        p = use.parameters
        found: list[FieldError] = []
        if _true(p.get("jobssh")) and not job.gang_allocation:
            found.append(
                FieldError(
                    use.field_path("jobssh"),
                    "runtime plugin ssh: jobssh is off because extras.gangAllocation is false "
                    "(as on OpenPAI): no job key pair and no <role>-<index> host names",
                )
            )
        if _true(p.get("sshbarrier")) and not job_ssh(use, job):
            found.append(
                FieldError(
                    use.field_path("sshbarrier"),
                    "runtime plugin ssh: sshbarrier needs jobssh, so no barrier runs",
                )
            )
        userssh = _userssh(p)
        if userssh is not None and userssh[0] not in USERSSH_TYPES:
            found.append(
                FieldError(
                    use.field_path("userssh.type"),
                    f"runtime plugin ssh: userssh type {userssh[0]!r} is not supported here "
                    "(custom is: the public keys in value); its keys are ignored",
                )
            )
        if not job_ssh(use, job) and userssh is None:
            found.append(
                FieldError(
                    use.path,
                    "runtime plugin ssh: neither jobssh nor userssh (with type and value) is "
                    "set, so no sshd starts",
                )
            )
        return found

    def sections(self, use: PluginUse, job: JobProtocol, backend: str) -> Sections:
        p = use.parameters
        jobssh = job_ssh(use, job)
        userssh = _userssh(p)
        if not jobssh and userssh is None:
            return Sections()
        args = ["true" if jobssh else "false"]
        if userssh is not None:
            args += [shell_word(v, use.kept_secrets) for v in userssh]
        # The Kubernetes task script keeps the private key out of the environment of
        # everything else it runs (``export -n``); only sshd.sh gets it.
        pre = [f'{PRIVATE_KEY_VAR}="${{{PRIVATE_KEY_VAR}-}}" {_run("sshd.sh", args)}']
        if jobssh and _true(p.get("sshbarrier")):
            timeout = minutes(p["sshbarrierTimeout"]) if "sshbarrierTimeout" in p else None
            pre.append(_run("sshbarrier.sh", [timeout] if timeout else []))
        return Sections(pre=pre)

    def unsupported(self, use: PluginUse, backend: str) -> FieldError:
        return FieldError(
            use.path,
            f"runtime plugin ssh is not supported on the {backend} backend: no sshd starts "
            "and there are no <role>-<index> host names; every task runs on this machine as "
            "you, so a peer is reachable at 127.0.0.1 (PAI_HOST_IP_<role>_<index>) on its "
            "ports (PAI_PORT_LIST_<role>_<index>_<label>, ssh among them, free for a server "
            "of your own); it is ignored",
        )
