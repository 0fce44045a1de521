"""``teamwise_storage``: deprecated in OpenPAI, whose plugin only logs that it ignores
itself; the same here, with a warning at submission."""

from __future__ import annotations

from ...errors import FieldError
from ...spec.pluginparams.uses import PluginUse
from ...spec.protocol import JobProtocol
from .base import Plugin


class TeamwiseStorage(Plugin):
    name = "teamwise_storage"

    def warnings(self, use: PluginUse, job: JobProtocol, backend: str) -> list[FieldError]:
        return [
            FieldError(
                use.path,
                "runtime plugin teamwise_storage is deprecated in OpenPAI and does nothing "
                "there; it is ignored here too (mount storages with extras.storages)",
            )
        ]
