"""``cmd``: shell lines before the user's commands and after they succeed, written either as
``preCommands``/``postCommands`` or as ``callbacks`` (a prerequisite's form: ``taskStarts``
→ before, ``taskSucceeds`` → after; other events are ignored, as OpenPAI does)."""

from __future__ import annotations

from ...spec.pluginparams.cmd import callbacks, command_lines
from ...spec.pluginparams.uses import PluginUse
from ...spec.protocol import JobProtocol
from .base import Plugin, Sections

EVENTS = {"taskStarts": "pre", "taskSucceeds": "post"}


class Cmd(Plugin):
    name = "cmd"

    def sections(self, use: PluginUse, job: JobProtocol, backend: str) -> Sections:
        p = use.parameters
        pre: list[str] = []
        post: list[str] = []
        if p.get("callbacks"):
            for event, lines in callbacks(p["callbacks"]) or []:
                if EVENTS.get(event) == "pre":
                    pre += lines
                elif EVENTS.get(event) == "post":
                    post += lines
            return Sections(pre, post)
        return Sections(
            command_lines(p.get("preCommands", [])) or [],
            command_lines(p.get("postCommands", [])) or [],
        )
