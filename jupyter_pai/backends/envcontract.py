"""The environment every task instance gets, on every backend (design §3).

Pure: a backend says where each instance lives (host) and which ports it holds; this module
turns that into OpenPAI's variables and the torch.distributed ones, so local processes and
Kubernetes pods see the same contract.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from ..spec.protocol import JobProtocol

# The label of the port a task gets when its role declares none: OpenPAI's host lists are
# ``host:port``, and a TensorFlow ps declares no ports yet appears in ``--ps_hosts``.
DEFAULT_PORT_LABEL = "default"


@dataclass(frozen=True)
class Placement:
    """Where one task instance runs and the ports it holds (label → ports)."""

    host: str
    ports: Mapping[str, list[int]] = field(default_factory=dict)

    @property
    def first_port(self) -> int | None:
        for ports in self.ports.values():
            if ports:
                return ports[0]
        return None


TaskKey = tuple[str, int]


def task_keys(job: JobProtocol) -> list[TaskKey]:
    """Every instance in rank order: roles as written, then index."""
    return [(role, i) for role, spec in job.task_roles.items() for i in range(spec.instances)]


def port_requests(job: JobProtocol, role: str) -> dict[str, int]:
    """label → count of ports each instance of ``role`` needs (a default one if none declared)."""
    declared = {k: v for k, v in job.task_roles[role].resource_per_instance.ports.items() if v > 0}
    return declared or {DEFAULT_PORT_LABEL: 1}


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
    env["PAI_JOB_NAME"] = job_id
    env["PAI_USER_NAME"] = env["PAI_USERNAME"] = user
    env["PAI_VIRTUAL_CLUSTER"] = virtual_cluster
    env["PAI_DEFAULT_FS_URI"] = ""
    env["PAI_TASK_ROLE_COUNT"] = env["PAI_JOB_TASK_ROLE_COUNT"] = str(len(roles))
    env["PAI_TASK_ROLE_LIST"] = env["PAI_JOB_TASK_ROLE_LIST"] = ",".join(roles)
    env["PAI_JOB_TASK_COUNT"] = str(len(keys))
    env["PAI_TASK_ROLE_INSTANCES"] = ",".join(f"{r}:{i}" for r, i in keys)
    for role, spec in job.task_roles.items():
        res = spec.resource_per_instance
        cpu = int(res.cpu) if float(res.cpu).is_integer() else res.cpu
        env[f"PAI_TASK_ROLE_TASK_COUNT_{role}"] = str(spec.instances)
        env[f"PAI_RESOURCE_{role}"] = (
            f"{res.gpu},{cpu},{res.memory_mb},{spec.extra_container_options.shm_mb}"
        )
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
            port = place.first_port
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
    env["PAI_CURRENT_CONTAINER_IP"] = place.host
    if place.first_port is not None:
        env["PAI_CURRENT_CONTAINER_PORT"] = str(place.first_port)
    for label, ports in place.ports.items():
        env[f"PAI_CONTAINER_HOST_{label}_PORT_LIST"] = ",".join(str(p) for p in ports)
    env["RANK"] = str(task_keys(job).index((role, index)))
    # Each task is its own "node" with only its own GPUs visible, so rank within it is 0.
    env["LOCAL_RANK"] = "0"
    env["LOCAL_WORLD_SIZE"] = "1"
    env["GROUP_RANK"] = env["RANK"]
    return env
