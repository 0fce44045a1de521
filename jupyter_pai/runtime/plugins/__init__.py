"""One module per OpenPAI runtime plugin; :data:`PLUGINS` maps a plugin name to it."""

from __future__ import annotations

from ...errors import FieldError
from ...spec.pluginparams.uses import PluginUse
from .base import BACKENDS, KUBERNETES, LOCAL, Plugin, Sections
from .cmd import Cmd
from .git import Git
from .ssh import Ssh
from .teamwise_storage import TeamwiseStorage
from .tensorboard import Tensorboard

PLUGINS: dict[str, Plugin] = {
    p.name: p for p in (Cmd(), Git(), Tensorboard(), Ssh(), TeamwiseStorage())
}


class Unknown(Plugin):
    """A name OpenPAI does not ship: nothing runs."""

    backends = frozenset()

    def unsupported(self, use: PluginUse, backend: str) -> FieldError:
        return FieldError(
            f"{use.path}.plugin",
            f"unknown runtime plugin {use.name!r} (known: {', '.join(PLUGINS)}); it is ignored",
        )


def plugin_for(name: str) -> Plugin:
    return PLUGINS.get(name) or Unknown()


__all__ = ["BACKENDS", "KUBERNETES", "LOCAL", "PLUGINS", "Plugin", "Sections", "plugin_for"]
