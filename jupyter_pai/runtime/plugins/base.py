"""What a runtime plugin module provides: warnings at submission, the ports it needs, and
the shell it adds around the user's commands. Its parameters are checked with the job
(:mod:`jupyter_pai.spec.pluginparams`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from ...errors import FieldError
from ...spec.pluginparams.uses import PluginUse
from ...spec.protocol import JobProtocol

LOCAL = "local"
KUBERNETES = "kubernetes"
BACKENDS = frozenset({LOCAL, KUBERNETES})


@dataclass(frozen=True)
class Sections:
    """Shell lines a plugin runs before the user's commands (OpenPAI's ``taskStarts``) and
    after they succeed (``taskSucceeds``)."""

    pre: list[str] = field(default_factory=list)
    post: list[str] = field(default_factory=list)


class Plugin:
    """A runtime plugin; the defaults do nothing, each module overrides what it needs."""

    name: ClassVar[str] = ""
    #: Backends that run it; on the others it is a warning at submission and runs nothing.
    backends: ClassVar[frozenset[str]] = BACKENDS

    def warnings(self, use: PluginUse, job: JobProtocol, backend: str) -> list[FieldError]:
        return []

    def ports(self, use: PluginUse, job: JobProtocol) -> dict[str, int | None]:
        """Port labels the plugin needs on ``use.role`` → a requested number or None."""
        return {}

    def sections(self, use: PluginUse, job: JobProtocol, backend: str) -> Sections:
        return Sections()

    def unsupported(self, use: PluginUse, backend: str) -> FieldError:
        return FieldError(
            use.path,
            f"runtime plugin {use.name} is not supported on the {backend} backend; it is ignored",
        )
