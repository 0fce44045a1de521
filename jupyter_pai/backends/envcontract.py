"""The environment every task instance gets, on every backend alike (so a job runs unchanged on each), as OpenPAI's
rest-server and runtime set it.

Pure: a backend says where each instance lives (host) and which ports it holds; this module
turns that into OpenPAI's variables and the torch.distributed ones, so local processes and
Kubernetes pods see the same contract. ``PAI_WORK_DIR`` is not here: the task's script
exports it (:func:`jupyter_pai.runtime.task_script`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from ..runtime import plugin_ports
from ..spec.protocol import JobProtocol

#: Labels every task gets unless its role declares them (OpenPAI adds both, in this order,
#: after the declared ones): sshd listens on ``ssh``; host lists use ``http``.
SSH_LABEL = "ssh"
HTTP_LABEL = "http"


@dataclass(frozen=True)
class Placement:
    """Where one task instance runs and the ports it holds (label → ports)."""

    host: str
    ports: Mapping[str, list[int]] = field(default_factory=dict)

    def port(self, label: str) -> int | None:
        """The first port of ``label``, if the task holds one."""
        ports = self.ports.get(label) or []
        return ports[0] if ports else None


TaskKey = tuple[str, int]


def task_keys(job: JobProtocol) -> list[TaskKey]:
    """Every instance in rank order: roles as written, then index."""
    return [(role, i) for role, spec in job.task_roles.items() for i in range(spec.instances)]


def port_requests(job: JobProtocol, role: str) -> dict[str, int]:
    """label → count of ports each instance of ``role`` needs, in OpenPAI's order: the
    declared labels as written, then those runtime plugins need (``tensorboard``), then
    ``ssh`` and ``http`` unless declared (a label declared with count 0 stays without)."""
    declared = job.task_roles[role].resource_per_instance.ports
    ports = {label: n for label, n in declared.items() if n > 0}
    for label in [*plugin_ports(job, role), SSH_LABEL, HTTP_LABEL]:
        if label not in declared:
            ports.setdefault(label, 1)
    return ports


def port_list(ports: Mapping[str, list[int]]) -> str:
    """``PAI_CONTAINER_HOST_PORT_LIST``: ``label:p1,p2;`` for every label, in order."""
    return "".join(f"{label}:{','.join(str(p) for p in ps)};" for label, ps in ports.items())


def parse_port_list(text: str) -> dict[str, list[int]]:
    """The ports :func:`port_list` wrote (what a pod's environment says it holds)."""
    ports: dict[str, list[int]] = {}
    for item in text.split(";"):
        label, sep, numbers = item.partition(":")
        if sep and label:
            ports[label] = [int(n) for n in numbers.split(",") if n.strip().isdigit()]
    return ports


def _shm_mb(job: JobProtocol, role: str) -> int:
    # OpenPAI reports the shmMB the job wrote, else 0 (though /dev/shm is 512 MiB then).
    options = job.task_roles[role].extra_container_options
    return options.shm_mb if "shm_mb" in options.model_fields_set else 0


def job_environment(
    job: JobProtocol,
    *,
    job_id: str,
    user: str,
    virtual_cluster: str,
    placements: Mapping[TaskKey, Placement],
    master_port: int,
) -> dict[str, str]:
    """Variables shared by every task of the job."""
    env: dict[str, str] = {}
    roles = job.role_names
    keys = task_keys(job)
    env["PAI_JOB_NAME"] = env["PAI_FRAMEWORK_NAME"] = job_id
    env["PAI_USER_NAME"] = env["PAI_USERNAME"] = user
    env["PAI_VIRTUAL_CLUSTER"] = virtual_cluster
    env["PAI_DEFAULT_FS_URI"] = ""
    env["PAI_TASK_ROLE_COUNT"] = env["PAI_JOB_TASK_ROLE_COUNT"] = str(len(roles))
    env["PAI_TASK_ROLES_NUM"] = str(len(roles))
    env["PAI_TASK_ROLE_LIST"] = env["PAI_JOB_TASK_ROLE_LIST"] = ",".join(roles)
    env["PAI_JOB_TASK_COUNT"] = env["PAI_TASKS_NUM"] = str(len(keys))
    env["PAI_TASK_ROLE_INSTANCES"] = ",".join(f"{r}:{i}" for r, i in keys)
    for role, spec in job.task_roles.items():
        res = spec.resource_per_instance
        cpu = int(res.cpu) if float(res.cpu).is_integer() else res.cpu
        env[f"PAI_TASK_ROLE_TASK_COUNT_{role}"] = str(spec.instances)
        env[f"PAI_RESOURCE_{role}"] = f"{res.gpu},{cpu},{res.memory_mb},{_shm_mb(job, role)}"
        env[f"PAI_MIN_FAILED_TASK_COUNT_{role}"] = str(spec.min_failed)
        env[f"PAI_MIN_SUCCEEDED_TASK_COUNT_{role}"] = str(spec.min_succeeded)
        hosts = []
        for i in range(spec.instances):
            place = placements[(role, i)]
            env[f"PAI_HOST_IP_{role}_{i}"] = place.host
            for label, ports in place.ports.items():
                joined = ",".join(str(p) for p in ports)
                env[f"PAI_PORT_LIST_{role}_{i}_{label}"] = joined
                env[f"PAI_{role}_{i}_{label}_PORT"] = joined
            port = place.port(HTTP_LABEL)
            hosts.append(f"{place.host}:{port}" if port is not None else place.host)
        env[f"PAI_TASK_ROLE_{role}_HOST_LIST"] = ",".join(hosts)
    first = placements[keys[0]]
    env["MASTER_ADDR"] = first.host
    env["MASTER_PORT"] = str(master_port)
    env["WORLD_SIZE"] = str(len(keys))
    return env


def task_environment(
    job: JobProtocol,
    shared: Mapping[str, str],
    *,
    role: str,
    index: int,
    placements: Mapping[TaskKey, Placement],
) -> dict[str, str]:
    """The shared variables plus those of one instance."""
    env = dict(shared)
    place = placements[(role, index)]
    env["PAI_CURRENT_TASK_ROLE_NAME"] = role
    env["PAI_CURRENT_TASK_ROLE_CURRENT_TASK_INDEX"] = str(index)
    env["PAI_TASK_INDEX"] = str(index)
    env["PAI_CURRENT_CONTAINER_IP"] = env["PAI_CONTAINER_HOST_IP"] = place.host
    http, ssh = place.port(HTTP_LABEL), place.port(SSH_LABEL)
    if http is not None:
        env["PAI_CURRENT_CONTAINER_PORT"] = env["PAI_CONTAINER_HOST_PORT"] = str(http)
    if ssh is not None:
        env["PAI_CONTAINER_SSH_PORT"] = str(ssh)
    for label, ports in place.ports.items():
        env[f"PAI_CONTAINER_HOST_{label}_PORT_LIST"] = ",".join(str(p) for p in ports)
    env["PAI_CONTAINER_HOST_PORT_LIST"] = port_list(place.ports)
    env["RANK"] = str(task_keys(job).index((role, index)))
    # Each task is its own "node" with only its own GPUs visible, so rank within it is 0.
    env["LOCAL_RANK"] = "0"
    env["LOCAL_WORLD_SIZE"] = "1"
    env["GROUP_RANK"] = env["RANK"]
    return env
