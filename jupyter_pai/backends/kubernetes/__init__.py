"""The Kubernetes backend: jobs as Volcano (or Kueue, HiveD, native gang) objects."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .backend import KubernetesBackend

__all__ = ["KubernetesBackend"]


def __getattr__(name: str) -> Any:
    # Lazy, so the pure builders import without kubernetes_asyncio.
    if name == "KubernetesBackend":
        from .backend import KubernetesBackend

        return KubernetesBackend
    raise AttributeError(name)
