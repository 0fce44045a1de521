"""The local backend: jobs as processes on this machine (the embedded default)."""

from .backend import LocalBackend

__all__ = ["LocalBackend"]
