"""What each backend does with a job's runtime plugins, said at submission: warnings for
what will not run as written (errors for parameters OpenPAI's plugin would fail on come
with the job: :func:`jupyter_pai.spec.pluginparams.plugin_errors`)."""

from __future__ import annotations

from ..errors import FieldError
from ..spec.pluginparams.uses import every_use, plugin_uses
from ..spec.protocol import JobProtocol
from .plugins import plugin_for


def submission_warnings(job: JobProtocol, backend: str) -> list[FieldError]:
    """Each plugin entry that ``backend`` ignores or runs differently, naming the plugin
    and where it is written."""
    warnings: list[FieldError] = []
    for use in every_use(job):
        plugin = plugin_for(use.name)
        if backend not in plugin.backends:
            warnings.append(plugin.unsupported(use, backend))
        else:
            warnings += plugin.warnings(use, job, backend)
    return warnings


def plugin_ports(job: JobProtocol, role: str) -> dict[str, int | None]:
    """Port labels the role's plugins need → the number asked for (None: any free one)."""
    ports: dict[str, int | None] = {}
    for use in plugin_uses(job, role, secrets=False):
        for label, number in plugin_for(use.name).ports(use, job).items():
            ports.setdefault(label, number)
    return ports
