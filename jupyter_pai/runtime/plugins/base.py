"""What a runtime plugin module provides: checks at submission, the ports it needs, and the
shell it adds around the user's commands."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from ...errors import FieldError
from ...spec.protocol import JobProtocol
from ..uses import PluginUse

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

    def errors(self, use: PluginUse) -> list[FieldError]:
        """Parameters OpenPAI's plugin would fail on (refused at submission)."""
        return []

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


def command_lines(value: Any) -> list[str] | None:
    """A list of shell lines (a single text is one line); None when it is neither."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value)
    return None
