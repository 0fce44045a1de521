"""The local backend: jobs as processes on this machine (the embedded default)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .backend import LocalBackend

__all__ = ["LocalBackend"]


def __getattr__(name: str) -> Any:
    # Lazy, so a job's supervisor process does not import traitlets and the backend class.
    if name == "LocalBackend":
        from .backend import LocalBackend

        return LocalBackend
    raise AttributeError(name)
