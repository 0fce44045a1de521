"""``ssh``: not run yet on any backend (task-to-task ssh with ``<role>-<index>`` host names
and ``sshbarrier`` is to come); a warning at submission says so."""

from __future__ import annotations

from ...errors import FieldError
from ..uses import PluginUse
from .base import Plugin


class Ssh(Plugin):
    name = "ssh"
    backends = frozenset()

    def unsupported(self, use: PluginUse, backend: str) -> FieldError:
        return FieldError(
            use.path,
            f"runtime plugin ssh is not supported on the {backend} backend yet: no sshd "
            "starts and tasks cannot ssh to each other by <role>-<index>; it is ignored",
        )
