"""jupyter-pai: OpenPAI-style GPU jobs and remote GPU kernels from JupyterLab."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

try:
    from ._version import __version__
except ImportError:  # running from a source tree that was never built
    __version__ = "0.0.0.dev0"

__all__ = ["Client", "Job", "__version__"]

if TYPE_CHECKING:
    from .notebook.client import Client, Job


def __getattr__(name: str) -> Any:
    """``jupyter_pai.Client`` and ``Job``, imported on first use: importing jupyter_pai
    (the server extension, the CLI, a kernel's ``%load_ext``) stays light."""
    if name in ("Client", "Job"):
        from .notebook import client

        return getattr(client, name)
    raise AttributeError(f"module 'jupyter_pai' has no attribute {name!r}")


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext jupyter_pai``: the ``%pai`` and ``%%pai run`` magics, and a ``Job`` left
    as a cell's result (``%%pai run --detach``) shown as a live widget."""
    from .notebook.magics import PAIMagics
    from .widgets.jobview import register

    ipython.register_magics(PAIMagics(ipython))
    register(ipython)


def _jupyter_labextension_paths() -> list[dict[str, str]]:
    return [{"src": "labextension", "dest": "jupyter-pai"}]


def _jupyter_server_extension_points() -> list[dict[str, Any]]:
    from .server.app import PAIExtension

    return [{"module": "jupyter_pai", "app": PAIExtension}]
