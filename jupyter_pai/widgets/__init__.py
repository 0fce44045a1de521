"""Notebook widgets (ipywidgets 8) over :class:`jupyter_pai.Client`::

    import jupyter_pai.widgets as pw
    pw.launcher()     # VC (free GPUs, live), GPUs, image, instances, command → Submit
    pw.monitor()      # your jobs, live: state, GPUs, duration, Stop; a job's log tail

Importing this module also makes a ``Job`` left as a cell's result display as a live
widget (:mod:`.jobview`). Widgets update from a background thread, never blocking the
kernel; ``close()`` a widget to stop its updates.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .jobview import JobView, register
from .launcher import Launcher
from .monitor import Monitor

if TYPE_CHECKING:
    from ..notebook.client import Client

__all__ = ["JobView", "Launcher", "Monitor", "launcher", "monitor", "register"]


def _client(client: Client | None) -> Client:
    if client is not None:
        return client
    from ..notebook.client import Client

    return Client()


def launcher(client: Client | None = None, **options: Any) -> Launcher:
    """A launch form; ``client`` default: ``Client()`` (this machine's configured backend)."""
    return Launcher(_client(client), **options)


def monitor(client: Client | None = None, **options: Any) -> Monitor:
    """A live table of your jobs; ``client`` default: ``Client()``."""
    return Monitor(_client(client), **options)


register()
