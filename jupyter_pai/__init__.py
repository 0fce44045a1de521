"""jupyter-pai: OpenPAI-style GPU jobs and remote GPU kernels from JupyterLab."""

from __future__ import annotations

from typing import Any

try:
    from ._version import __version__
except ImportError:  # running from a source tree that was never built
    __version__ = "0.0.0.dev0"

__all__ = ["__version__"]


def _jupyter_labextension_paths() -> list[dict[str, str]]:
    return [{"src": "labextension", "dest": "jupyter-pai"}]


def _jupyter_server_extension_points() -> list[dict[str, Any]]:
    from .server.app import PAIExtension

    return [{"module": "jupyter_pai", "app": PAIExtension}]
