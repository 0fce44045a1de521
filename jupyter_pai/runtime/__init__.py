"""What OpenPAI's runtime runs in a task around the user's commands: its runtime plugins
(``cmd``, prerequisite ``callbacks``, ``git``, ``tensorboard``, …) and the task's script.

Pure and free of tornado: the backends call :func:`task_script` to get what a task runs,
:func:`plugin_ports` for the ports plugins need, and :func:`submission_warnings` /
:func:`plugin_errors` to tell users at submission what will and will not run.
"""

from __future__ import annotations

from .script import task_script
from .support import plugin_errors, plugin_ports, submission_warnings
from .uses import PluginUse, plugin_uses

__all__ = [
    "PluginUse",
    "plugin_errors",
    "plugin_ports",
    "plugin_uses",
    "submission_warnings",
    "task_script",
]
