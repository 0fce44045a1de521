"""Credentials and namespace, found as kubectl finds them: a kubeconfig (``KUBECONFIG`` or
``~/.kube/config``, its current or a named context), else the in-cluster service account."""

from __future__ import annotations

import os
from pathlib import Path

import yaml

from .kubeclient import ApiClient, Configuration, config

SA_NAMESPACE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")


def kubeconfig_path(explicit: str | None) -> str | None:
    candidates = [explicit] if explicit else []
    env = os.environ.get("KUBECONFIG")
    if env:
        candidates += env.split(os.pathsep)
    candidates.append(str(Path.home() / ".kube" / "config"))
    return next((c for c in candidates if c and Path(c).is_file()), None)


def context_namespace(path: str | None, context: str | None) -> str | None:
    """The namespace the kubeconfig's (current) context names, if any."""
    if path is None:
        return None
    doc = yaml.safe_load(Path(path).read_text()) or {}
    name = context or doc.get("current-context")
    for ctx in doc.get("contexts") or []:
        if ctx.get("name") == name:
            ns = (ctx.get("context") or {}).get("namespace")
            return str(ns) if ns else None
    return None


def pod_namespace() -> str | None:
    """The namespace this process's pod runs in (its service account volume says), if it
    runs in a pod."""
    try:
        return SA_NAMESPACE.read_text().strip() or None
    except OSError:
        return None


def default_namespace(kubeconfig: str | None, context: str | None) -> str:
    env = os.environ.get("JUPYTER_PAI_NAMESPACE")
    if env:
        return env
    return context_namespace(kubeconfig_path(kubeconfig), context) or pod_namespace() or "default"


async def api_client(kubeconfig: str | None, context: str | None) -> ApiClient:
    path = kubeconfig_path(kubeconfig)
    if path is not None:
        return await config.new_client_from_config(config_file=path, context=context)
    cfg = Configuration()
    config.load_incluster_config(client_configuration=cfg)  # type: ignore[no-untyped-call]
    return ApiClient(configuration=cfg)
