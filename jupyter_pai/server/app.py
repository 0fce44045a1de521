"""The Jupyter server extension: REST API under ``<base_url>/pai/api``."""

from __future__ import annotations

import gc

from jupyter_server.extension.application import ExtensionApp

from .. import __version__
from ..backends.local import LocalBackend
from ..config import PAIConfig
from .context import PAIContext
from .routes import handlers


class PAIExtension(ExtensionApp):
    name = "jupyter_pai"
    version = __version__
    description = "OpenPAI-style GPU jobs from JupyterLab"
    load_other_extensions = True

    classes = [PAIConfig, LocalBackend]

    def initialize_settings(self) -> None:
        pai_config = PAIConfig(config=self.config, parent=self)
        if pai_config.gc_thresholds:
            # The server is the user's own: its collector is tuned for the job caches.
            gc.set_threshold(*pai_config.gc_thresholds[:3])
        root = getattr(self.serverapp, "root_dir", None) or "."
        contents = getattr(self.serverapp, "contents_manager", None)
        runtime = getattr(self.serverapp, "runtime_dir", None)
        self.settings["jupyter_pai"] = PAIContext(
            pai_config,
            working_dir=root,
            allow_hidden=bool(getattr(contents, "allow_hidden", False)),
            private_folders={runtime: "the Jupyter server's runtime directory"} if runtime else {},
        )
        self.log.info("jupyter-pai %s: backend %s", __version__, pai_config.backend)

    def initialize_handlers(self) -> None:
        self.handlers.extend(handlers())

    async def stop_extension(self) -> None:
        ctx: PAIContext | None = self.settings.get("jupyter_pai")
        if ctx is not None:
            await ctx.close()
