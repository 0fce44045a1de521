"""The whole bash script of a task, as OpenPAI's runtime runs a task, for every backend.

OpenPAI runs ``precommands.sh`` (each plugin's taskStarts part, in plugin order), then
``user.sh`` (deployment preCommands, the role's commands, deployment postCommands), then
``postcommands.sh`` (each plugin's taskSucceeds part, in reverse plugin order) only when the
user's commands succeeded. Each part runs in its own process there; here each is a
subshell, so an ``exit`` or ``cd`` in one does not end or move the others. A failing part
(failurePolicy ``fail``, the default) ends the task with its exit code; ``ignore`` goes on.

OpenPAI's scripts also set ``nounset``; this one does not, so commands that test a
variable which may be unset (``[ -z "$CUDA_VISIBLE_DEVICES" ]``) behave as they do in a
plain shell, the way jobs on this backend always ran.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..spec.pluginparams.uses import PluginUse, plugin_uses
from ..spec.protocol import JobProtocol
from ..spec.render import task_commands
from .plugins import plugin_for
from .shell import quoted_message

MARK = "[jupyter-pai]"
PRE, POST = "taskStarts", "taskSucceeds"


def _section(use: PluginUse, event: str, lines: list[str]) -> list[str]:
    title = f"{MARK} runtime plugin {use.name} ({use.path}): {event}"
    if use.failure_policy == "ignore":
        return [
            quoted_message(title),
            "(",
            "set +o errexit",
            *lines,
            f') || echo "{MARK} runtime plugin {use.name}: {event} failed (exit $?); '
            'ignored (failurePolicy: ignore)" >&2',
        ]
    return [quoted_message(title), "(", *lines, ")"]


def task_script(
    job: JobProtocol,
    role: str,
    *,
    backend: str,
    secrets: bool = True,
    prelude: Sequence[str] = (),
) -> str:
    """The script one task of ``role`` runs on ``backend`` (``local`` / ``kubernetes``).

    ``secrets=False`` leaves ``<% $secrets.x %>`` in commands and plugin parameters for the
    backend to fill in at run time; ``prelude`` runs before everything (after
    ``PAI_WORK_DIR`` is set)."""
    pre: list[str] = []
    post_parts: list[list[str]] = []
    for use in plugin_uses(job, role, secrets=secrets):
        plugin = plugin_for(use.name)
        if backend not in plugin.backends:
            continue  # a warning at submission said so
        sections = plugin.sections(use, job, backend)
        if sections.pre:
            pre += _section(use, PRE, sections.pre)
        if sections.post:
            post_parts.append(_section(use, POST, sections.post))
    post = [line for part in reversed(post_parts) for line in part]
    lines = [
        "set -o errexit -o pipefail",
        'export PAI_WORK_DIR="$PWD"',
        *prelude,
        *pre,
        "(",
        *task_commands(job, role, secrets=secrets),
        ")",
        *post,
    ]
    return "\n".join(lines) + "\n"
