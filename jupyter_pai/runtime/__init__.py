"""What OpenPAI's runtime runs in a task around the user's commands: its runtime plugins
(``cmd``, prerequisite ``callbacks``, ``git``, ``tensorboard``, …) and the task's script.

Pure and free of tornado: the backends call :func:`task_script` to get what a task runs,
:func:`plugin_ports` for the ports plugins need, and :func:`submission_warnings` /
:func:`plugin_errors` to tell users at submission what will and will not run.

Where plugin entries are found in a job and how their parameters are checked belong to the
job (:mod:`jupyter_pai.spec.pluginparams`); ``plugin_errors``, ``plugin_uses`` and
``PluginUse`` are re-exported here for the backends that run them.
"""

from __future__ import annotations

from ..spec.pluginparams import PluginUse, plugin_errors, plugin_uses
from .script import task_script
from .support import plugin_ports, submission_warnings

__all__ = [
    "PluginUse",
    "plugin_errors",
    "plugin_ports",
    "plugin_uses",
    "submission_warnings",
    "task_script",
]
