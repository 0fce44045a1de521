"""Which runtime plugins a task role runs, collected as OpenPAI's initializer does.

First the role's ``prerequisites`` (in the role's order) whose prerequisite names a
``com.microsoft.pai.runtimeplugin.<name>`` plugin, its parameters being the prerequisite
minus ``plugin``/``failurePolicy``/``type`` (so ``callbacks`` reach ``cmd``); then the
entries of ``extras["com.microsoft.pai.runtimeplugin"]`` whose ``taskroles`` (absent: all)
include the role. Parameters are rendered for the role (``$parameters``, ``$secrets``,
``$script``/``$data``/``$output``).

Every parameter is data: plugins write it into the task's script with
:func:`~jupyter_pai.runtime.shell.shell_word`, keeping only the secret markers listed in
:attr:`PluginUse.kept_secrets`. Only the cmd plugin's commands (and ``callbacks``) are code.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Literal

from ..protocol import JobProtocol
from ..render import render_for_role
from ..templating import MARKER, lookup

PLUGIN_PREFIX = "com.microsoft.pai.runtimeplugin"
EXTRAS_PATH = f"extras.{PLUGIN_PREFIX}"

FailurePolicy = Literal["ignore", "fail"]


@dataclass(frozen=True)
class PluginUse:
    """One plugin entry as one task role runs it."""

    name: str
    #: Where the entry is written: ``prerequisites.1`` or ``extras.com…runtimeplugin.2``.
    path: str
    parameters: dict[str, Any]
    failure_policy: FailurePolicy
    role: str
    #: Every role that runs this entry (for checks about the entry as a whole).
    roles: tuple[str, ...] = field(default=())
    #: Keys of the ``<% $secrets.KEY %>`` left in ``parameters`` for the backend to fill in
    #: (declared secrets with identifier-like names); empty when secrets were filled in.
    kept_secrets: frozenset[str] = field(default=frozenset())

    def field_path(self, key: str) -> str:
        """Where parameter ``key`` is written: inside ``parameters`` for an extras entry,
        on the prerequisite itself for a prerequisite."""
        inner = "" if self.path.startswith("prerequisites.") else ".parameters"
        return f"{self.path}{inner}.{key}"


def _prerequisite_use(job: JobProtocol, i: int) -> PluginUse:
    pre = job.prerequisites[i]
    params = {
        k: v for k, v in pre.as_written().items() if k not in ("plugin", "failurePolicy", "type")
    }
    return PluginUse(
        name=(pre.plugin or "")[len(PLUGIN_PREFIX) + 1 :],
        path=f"prerequisites.{i}",
        parameters=params,
        failure_policy=pre.failure_policy or "fail",
        role="",
        roles=tuple(r for r, spec in job.task_roles.items() if pre.name in spec.prerequisites),
    )


def _extras_use(job: JobProtocol, i: int) -> PluginUse:
    plugin = job.extras.runtime_plugins[i]
    return PluginUse(
        name=plugin.plugin,
        path=f"{EXTRAS_PATH}.{i}",
        parameters=dict(plugin.parameters),
        failure_policy=plugin.failure_policy or "fail",
        role="",
        roles=tuple(r for r in job.task_roles if plugin.taskroles is None or r in plugin.taskroles),
    )


def _is_plugin(job: JobProtocol, i: int) -> bool:
    return (job.prerequisites[i].plugin or "").startswith(PLUGIN_PREFIX)


def _texts(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [t for v in value for t in _texts(v)]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _texts(v)]
    return []


def _kept_secrets(job: JobProtocol, parameters: dict[str, Any]) -> frozenset[str]:
    """Secret markers the rendering left in place; any other marker is text."""
    keys: set[str] = set()
    for text in _texts(parameters):
        for m in MARKER.finditer(text):
            if m["scope"] != "secrets" or not m["key"]:
                continue
            try:
                lookup(job.secrets, m["key"])
            except KeyError:
                continue
            keys.add(m["key"])
    return frozenset(keys)


def _for_role(use: PluginUse, job: JobProtocol, role: str, secrets: bool) -> PluginUse:
    parameters = render_for_role(job, role, use.parameters, secrets=secrets)
    kept = frozenset() if secrets else _kept_secrets(job, parameters)
    return replace(use, role=role, parameters=parameters, kept_secrets=kept)


def plugin_uses(job: JobProtocol, role: str, *, secrets: bool = True) -> list[PluginUse]:
    """The plugins ``role`` runs, in OpenPAI's order, parameters rendered for the role.

    ``secrets=False`` leaves ``<% $secrets.x %>`` in place (Kubernetes fills it in from
    the job's Secret at run time)."""
    raw: list[PluginUse] = []
    for name in job.task_roles[role].prerequisites:
        i = next(
            (
                i
                for i, pre in enumerate(job.prerequisites)
                if pre.name == name and _is_plugin(job, i)
            ),
            None,
        )
        if i is not None:
            raw.append(_prerequisite_use(job, i))
    for i in range(len(job.extras.runtime_plugins)):
        use = _extras_use(job, i)
        if role in use.roles:
            raw.append(use)
    return [_for_role(use, job, role, secrets) for use in raw]


def every_use(job: JobProtocol, *, secrets: bool = False) -> list[PluginUse]:
    """Each entry some role runs, once, rendered for the first such role (for the checks
    at submission)."""
    raw = [_prerequisite_use(job, i) for i in range(len(job.prerequisites)) if _is_plugin(job, i)]
    raw += [_extras_use(job, i) for i in range(len(job.extras.runtime_plugins))]
    return [_for_role(use, job, use.roles[0], secrets) for use in raw if use.roles]
