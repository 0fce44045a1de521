"""OpenPAI's runtime plugins as a job writes them: where their entries are (:mod:`.uses`)
and the parameters each plugin takes, one module a plugin.

The parameters are part of the job document, so a job whose plugin OpenPAI would fail on
is refused when it is parsed, on every backend; what each backend then runs is
:mod:`jupyter_pai.runtime`'s concern."""

from __future__ import annotations

from collections.abc import Callable

from ...errors import FieldError
from ..protocol import JobProtocol
from . import cmd, git, ssh, tensorboard
from .uses import PluginUse, every_use, plugin_uses

#: Plugin name → its parameter check; a plugin not listed takes any parameters.
CHECKS: dict[str, Callable[[PluginUse], list[FieldError]]] = {
    "cmd": cmd.errors,
    "git": git.errors,
    "ssh": ssh.errors,
    "tensorboard": tensorboard.errors,
}


def plugin_errors(job: JobProtocol) -> list[FieldError]:
    """Parameters a plugin cannot run with (the same on every backend)."""
    errors: list[FieldError] = []
    for use in every_use(job):
        check = CHECKS.get(use.name)
        if check is not None:
            errors += check(use)
    return errors


__all__ = ["PluginUse", "plugin_errors", "plugin_uses"]
