"""Whose jobs a namespace holds. A job's owner is read back from its own annotation,
which anyone who may write jobs in its namespace can set to any name. Under JupyterHub
each user's server runs in a namespace of its own that RBAC keeps others out of, so the
namespace is what makes a job the user's: in another namespace (a team's, shared), a job
annotated with the user's name may be someone else's, and is not treated as theirs (not
stopped, deleted or port-forwarded on their behalf)."""

from __future__ import annotations

import os

from . import connect


def foreign_namespace(namespace: str) -> str | None:
    """Why jobs in ``namespace`` are not the JupyterHub user's own, or None where they
    may be (not under JupyterHub, or not in a pod: the annotation decides, as before)."""
    hub_user = os.environ.get("JUPYTERHUB_USER")
    own = connect.pod_namespace()
    if not hub_user or own is None or namespace == own:
        return None
    return (
        f"namespace {namespace} is not yours ({hub_user}'s server runs in {own}): no job "
        "there is treated as yours, whatever its annotation says"
    )
