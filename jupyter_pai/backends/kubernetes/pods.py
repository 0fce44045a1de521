"""The pod template every flavor shares: command, environment contract, resources,
secrets, shared memory and storages. Pure: job spec in, plain dicts out."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ...errors import SpecError
from ...runtime import plugin_ports, task_script
from ...runtime.plugins.ssh import PRIVATE_KEY_VAR, uses_job_key
from ...spec.protocol import JobProtocol
from ...spec.templating import MARKER, as_text, lookup
from ..envcontract import Placement, TaskKey, job_environment, port_requests, task_keys
from ..envcontract import task_environment as contract_task_environment
from ..gputypes import GpuTypeCapacity
from .gpu_placement import place, unknown_type
from .jobssh import key_env, needs_job_key
from .naming import ANN_JOB_ID, LABEL_INDEX, LABEL_JOB, LABEL_ROLE, JobNames, base_labels
from .podsecurity import PodSecurity

Manifest = dict[str, Any]
PeerHost = Callable[[JobNames, str, int], str]

#: What the runtime plugins know this backend as.
BACKEND = "kubernetes"
GPU_RESOURCE = "nvidia.com/gpu"
SECRET_ENV_PREFIX = "PAI_SECRET_"
#: Variables that differ between instances of a role; a per-role template reads them from
#: the pod at run time instead of fixing them.
PER_INSTANCE = (
    "PAI_CURRENT_TASK_ROLE_CURRENT_TASK_INDEX",
    "PAI_TASK_INDEX",
    "PAI_CURRENT_CONTAINER_IP",
    "PAI_CONTAINER_HOST_IP",
    "RANK",
    "GROUP_RANK",
)


@dataclass(frozen=True)
class PodOptions:
    """Cluster-wide settings (the backend's traitlets) that shape every pod."""

    namespace: str
    default_image: str = "python:3.11-slim"
    node_selector: dict[str, str] = field(default_factory=dict)
    tolerations: list[dict[str, Any]] = field(default_factory=list)
    gpu_resource: str = GPU_RESOURCE
    master_port: int = 29500
    first_port: int = 30000
    #: storage name → persistent volume claim name (default: the same name)
    claims: dict[str, str] = field(default_factory=dict)
    service_account: str | None = None
    grace_seconds: int = 30
    #: registry host → the Secret its images are pulled with
    image_pull_secrets: dict[str, str] = field(default_factory=dict)
    #: the cluster's GPU types by name, where a job names one (read from the nodes at its
    #: submission); None: not read, so a role's type is not placed
    gpu_types: dict[str, GpuTypeCapacity] | None = None
    #: what the namespace's Pod Security level asks of every pod
    security: PodSecurity = field(default_factory=PodSecurity)


def registry_host(image: str) -> str:
    """The registry an image reference pulls from, as Docker reads it: the first part when
    it looks like a host (a dot, a port or ``localhost``), else Docker Hub."""
    first, sep, _ = image.partition("/")
    if sep and ("." in first or ":" in first or first == "localhost"):
        return first
    return "docker.io"


def default_peer_host(names: JobNames, role: str, index: int) -> str:
    """``<pod host>.<headless service>``: how peers reach an instance."""
    return f"{names.pod_host(role, index)}.{names.service}"


def role_ports(job: JobProtocol, role: str, first_port: int) -> dict[str, list[int]]:
    """Fixed ports per label in the contract's order (each pod has its own IP, so every
    instance may use the same): the number a plugin asks for (``tensorboard``'s ``port``),
    the others counted up from ``first_port`` around those."""
    requests = port_requests(job, role)
    asked = {
        label: n
        for label, n in plugin_ports(job, role).items()
        if n is not None and requests.get(label) == 1
    }
    taken = set(asked.values())
    ports: dict[str, list[int]] = {}
    nxt = first_port
    for label, count in requests.items():
        if label in asked:
            ports[label] = [asked[label]]
            continue
        ports[label] = []
        while len(ports[label]) < count:
            if nxt not in taken:
                ports[label].append(nxt)
            nxt += 1
    return ports


def placements(
    job: JobProtocol, names: JobNames, options: PodOptions, peer_host: PeerHost
) -> dict[TaskKey, Placement]:
    return {
        (role, i): Placement(
            host=peer_host(names, role, i), ports=role_ports(job, role, options.first_port)
        )
        for role, i in task_keys(job)
    }


def secret_variables(job: JobProtocol) -> dict[str, str]:
    """Secret key → the variable holding it, for every declared secret the task scripts
    (commands and runtime plugins) reference."""
    found: dict[str, str] = {}
    for role in job.task_roles:
        script = task_script(job, role, backend=BACKEND, secrets=False)
        for m in MARKER.finditer(script):
            key = m["key"]
            if m["scope"] != "secrets" or not key or key in found:
                continue
            try:
                lookup(job.secrets, key)
            except KeyError:
                continue  # left as written, as OpenPAI leaves what resolves to nothing
            var = SECRET_ENV_PREFIX + re.sub(r"[^A-Za-z0-9_]", "_", key)
            if var in found.values():
                var = f"{var}_{len(found)}"
            found[key] = var
    return found


def secret_manifest(job: JobProtocol, names: JobNames, labels: dict[str, str]) -> Manifest | None:
    """The job's Secret: the secrets its scripts use and, for the runtime plugin ssh, the
    job's key pair (filled in at submission: :func:`.jobssh.add_job_key`)."""
    variables = secret_variables(job)
    if not variables and not needs_job_key(job):
        return None
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": names.secret, "labels": dict(labels)},
        "type": "Opaque",
        "stringData": {var: as_text(lookup(job.secrets, key)) for key, var in variables.items()},
    }


def headless_service(names: JobNames, labels: dict[str, str]) -> Manifest:
    """Gives every pod with ``subdomain: <service>`` a stable DNS name before it is ready."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": names.service, "labels": dict(labels)},
        "spec": {
            "clusterIP": "None",
            "publishNotReadyAddresses": True,
            "selector": {LABEL_JOB: names.base},
        },
    }


def role_script(job: JobProtocol, role: str, secret_vars: dict[str, str]) -> str:
    """The task's script (:func:`jupyter_pai.runtime.task_script`) after the rank, computed
    from the index the pod learns at run time, with ``<% $secrets.x %>`` as
    ``${PAI_SECRET_x}`` so no value is in the pod."""

    def secret_ref(m: re.Match[str]) -> str:
        if m["scope"] != "secrets" or m["key"] not in secret_vars:
            return m.group(0)
        return "${" + secret_vars[m["key"]] + "}"

    prelude = [
        'export RANK="$((PAI_RANK_OFFSET + PAI_CURRENT_TASK_ROLE_CURRENT_TASK_INDEX))"',
        'export GROUP_RANK="$RANK"',
    ]
    if uses_job_key(job, role):
        # Only the runtime plugin ssh's sshd.sh gets the job's private key.
        prelude.append(f"export -n {PRIVATE_KEY_VAR}")
    script = task_script(job, role, backend=BACKEND, secrets=False, prelude=prelude)
    return MARKER.sub(secret_ref, script)


def k8s_escape(text: str) -> str:
    """Kubernetes expands ``$(VAR)`` in commands and env values; ``$$`` keeps a literal ``$``."""
    return text.replace("$", "$$")


def task_env(
    job: JobProtocol,
    names: JobNames,
    options: PodOptions,
    role: str,
    *,
    index: int | None,
    index_annotation: str | None,
    peer_host: PeerHost,
    vc: str,
) -> list[dict[str, Any]]:
    """The contract's variables. ``index=None``: a template shared by a role's instances,
    whose index the pod reads from ``index_annotation`` (set by the workload controller)."""
    places = placements(job, names, options, peer_host)
    shared = job_environment(
        job,
        job_id=names.job_id,
        user=names.user,
        virtual_cluster=vc,
        placements=places,
        master_port=options.master_port,
    )
    env = contract_task_environment(job, shared, role=role, index=index or 0, placements=places)
    rank_offset = task_keys(job).index((role, 0))
    fixed = [{"name": k, "value": k8s_escape(v)} for k, v in env.items() if k not in PER_INSTANCE]
    fixed.append({"name": "PAI_RANK_OFFSET", "value": str(rank_offset)})
    if index is None:
        assert index_annotation is not None
        idx: dict[str, Any] = {
            "name": "PAI_CURRENT_TASK_ROLE_CURRENT_TASK_INDEX",
            "valueFrom": {"fieldRef": {"fieldPath": f"metadata.annotations['{index_annotation}']"}},
        }
    else:
        idx = {"name": "PAI_CURRENT_TASK_ROLE_CURRENT_TASK_INDEX", "value": str(index)}
    per_instance = [
        idx,
        {"name": "PAI_TASK_INDEX", "value": "$(PAI_CURRENT_TASK_ROLE_CURRENT_TASK_INDEX)"},
        {
            "name": "PAI_CURRENT_CONTAINER_IP",
            "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}},
        },
        {"name": "PAI_CONTAINER_HOST_IP", "value": "$(PAI_CURRENT_CONTAINER_IP)"},
    ]
    secrets = [
        {"name": var, "valueFrom": {"secretKeyRef": {"name": names.secret, "key": var}}}
        for var in secret_variables(job).values()
    ]
    if uses_job_key(job, role):
        secrets += key_env(names)
    return fixed + per_instance + secrets


def pod_template(
    job: JobProtocol,
    names: JobNames,
    options: PodOptions,
    role: str,
    *,
    index: int | None = None,
    index_annotation: str | None = None,
    peer_host: PeerHost = default_peer_host,
    scheduler_name: str | None = None,
    priority_class: str | None = None,
    hostname: str | None = None,
    subdomain: str | None = None,
    extra_labels: dict[str, str] | None = None,
    extra_annotations: dict[str, str] | None = None,
    extra_limits: dict[str, str] | None = None,
    gpu_in_resources: bool = True,
    extra_env: list[dict[str, Any]] | None = None,
) -> Manifest:
    """A ``PodTemplateSpec`` (``metadata`` + ``spec``) for ``role``."""
    spec = job.task_roles[role]
    res = spec.resource_per_instance
    vc = job.virtual_cluster
    labels = {**base_labels(names, vc), LABEL_ROLE: names.roles[role], **(extra_labels or {})}
    if index is not None:
        labels[LABEL_INDEX] = str(index)
    cpu = int(res.cpu) if float(res.cpu).is_integer() else res.cpu
    requests: dict[str, str] = {"cpu": str(cpu), "memory": f"{res.memory_mb}Mi"}
    limits: dict[str, str] = {"memory": f"{res.memory_mb}Mi"}
    if res.gpu and gpu_in_resources:
        requests[options.gpu_resource] = limits[options.gpu_resource] = str(res.gpu)
    limits.update(extra_limits or {})
    secret_vars = secret_variables(job)
    env = task_env(
        job,
        names,
        options,
        role,
        index=index,
        index_annotation=index_annotation,
        peer_host=peer_host,
        vc=vc,
    ) + list(extra_env or [])
    mounts: list[dict[str, Any]] = []
    volumes: list[dict[str, Any]] = []
    shm = spec.extra_container_options.shm_mb
    if shm > 0:
        volumes.append({"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": f"{shm}Mi"}})
        mounts.append({"name": "dshm", "mountPath": "/dev/shm"})
    for i, storage in enumerate(job.extras.storages):
        claim = options.claims.get(storage.name, storage.name)
        volumes.append(
            {
                "name": f"storage-{i}",
                "persistentVolumeClaim": {"claimName": claim, "readOnly": storage.read_only},
            }
        )
        mounts.append(
            {
                "name": f"storage-{i}",
                "mountPath": storage.effective_mount_path,
                "readOnly": storage.read_only,
            }
        )
    container: Manifest = {
        "name": "main",
        "image": job.image_uri(role) or options.default_image,
        "command": ["bash", "-c", k8s_escape(role_script(job, role, secret_vars))],
        "env": env,
        "resources": {"requests": requests, "limits": limits},
        "ports": [
            {"containerPort": p, "protocol": "TCP"}
            for ports in role_ports(job, role, options.first_port).values()
            for p in ports
        ],
        "volumeMounts": mounts,
    }
    pod_spec: Manifest = {
        "restartPolicy": "Never",
        "terminationGracePeriodSeconds": options.grace_seconds,
        "enableServiceLinks": False,
        "automountServiceAccountToken": False,
        "containers": [container],
        "volumes": volumes,
    }
    if scheduler_name:
        pod_spec["schedulerName"] = scheduler_name
    if priority_class:
        pod_spec["priorityClassName"] = priority_class
    if hostname:
        pod_spec["hostname"] = hostname
    if subdomain:
        pod_spec["subdomain"] = subdomain
    if options.node_selector:
        pod_spec["nodeSelector"] = dict(options.node_selector)
    if options.tolerations:
        pod_spec["tolerations"] = [dict(t) for t in options.tolerations]
    if options.service_account:
        pod_spec["serviceAccountName"] = options.service_account
    gpu_type = job.gpu_type(role)
    if gpu_type and res.gpu and gpu_in_resources and options.gpu_types is not None:
        found = options.gpu_types.get(gpu_type)
        if found is None:
            raise SpecError([unknown_type(role, gpu_type, options.gpu_types)])
        place(pod_spec, container["resources"], found, res.gpu, options.gpu_resource)
    pull_secret = options.image_pull_secrets.get(registry_host(container["image"]))
    if pull_secret:
        pod_spec["imagePullSecrets"] = [{"name": pull_secret}]
    options.security.apply(pod_spec)
    return {
        "metadata": {
            "labels": labels,
            "annotations": {ANN_JOB_ID: names.job_id, **(extra_annotations or {})},
        },
        "spec": pod_spec,
    }
