"""Pods that meet their namespace's Pod Security level, which the API server's own
PodSecurity admission enforces (a user namespace of jupyter-pai's hub enforces
``baseline`` or ``restricted``; the chart's docs say the same for hand-made ones).

``baseline`` forbids what reaches the node (privileged containers, host namespaces,
``hostPath``, host ports, added capabilities): no pod of ours asks for any of it, so pods
stay as they are and images run as their own user, root included, as OpenPAI's do.
``restricted`` further wants every container non-root, without privilege escalation or
capabilities, under the runtime's default seccomp profile: every pod gets those fields,
and a user id (``run_as_user``, 1000 by default, as Jupyter's Docker Stacks' ``jovyan``)
for images whose own user is root. The runtime plugin ``ssh`` starts an sshd that runs as
root (privilege separation, the host keys of the image): under ``restricted`` a job that
uses it is refused at submission, naming the level, rather than started without ssh."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...errors import FieldError
from ...spec.pluginparams.uses import plugin_uses
from ...spec.protocol import JobProtocol

Manifest = dict[str, Any]

LEVELS = ("baseline", "restricted")


@dataclass(frozen=True)
class PodSecurity:
    level: str = "baseline"
    #: Under ``restricted``: the user and group containers run as (None: the image's own
    #: user, which must then be a non-root number) and the group that owns mounted volumes.
    run_as_user: int | None = 1000
    run_as_group: int | None = 100

    def __post_init__(self) -> None:
        if self.level not in LEVELS:
            raise ValueError(
                f"KubernetesBackend.pod_security is {self.level!r}: choose baseline or "
                "restricted, the Pod Security level of the namespace jobs run in"
            )

    def apply(self, pod_spec: Manifest) -> None:
        """Give ``pod_spec`` (and its containers) what the level needs."""
        if self.level != "restricted":
            return
        ctx: Manifest = {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}}
        if self.run_as_user is not None:
            ctx["runAsUser"] = self.run_as_user
        if self.run_as_group is not None:
            ctx["runAsGroup"] = ctx["fsGroup"] = self.run_as_group
        pod_spec["securityContext"] = {**pod_spec.get("securityContext", {}), **ctx}
        for container in [*pod_spec.get("initContainers", []), *pod_spec["containers"]]:
            container["securityContext"] = {
                **container.get("securityContext", {}),
                "allowPrivilegeEscalation": False,
                "capabilities": {"drop": ["ALL"]},
            }

    def refusals(self, job: JobProtocol) -> list[FieldError]:
        """What of ``job`` the level cannot run, each naming its field."""
        if self.level != "restricted":
            return []
        found: dict[str, FieldError] = {}
        for role in job.task_roles:
            for use in plugin_uses(job, role, secrets=False):
                if use.name == "ssh" and use.path not in found:
                    found[use.path] = FieldError(
                        use.path,
                        "runtime plugin ssh starts an sshd as root, which this namespace's "
                        "Pod Security level restricted forbids: remove the plugin, or ask "
                        "your admin for a namespace at level baseline",
                    )
        return list(found.values())
