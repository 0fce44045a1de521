"""JupyterHub integration: one call in the hub's configuration (zero-to-jupyterhub's
``hub.extraConfig``) gives each user a namespace of their own with jupyter-pai's rights
there, and their server the backend settings to use it::

    from jupyter_pai.hub import configure_kubespawner
    configure_kubespawner(c, flavor="kueue", vc_groups={"research": ["research"]})

See ``examples/jupyterhub/z2jh-values.yaml`` (not in ``examples/`` itself, whose
files are job specifications)."""

from __future__ import annotations

from typing import Any

from .hooks import make_modify_pod_hook, make_pre_spawn_hook
from .objects import SERVICE_ACCOUNT, HubSettings

__all__ = ["HubSettings", "configure_kubespawner"]


def configure_kubespawner(
    c: Any,
    *,
    flavor: str,
    vc_groups: dict[str, list[str]] | None = None,
    open_vcs: list[str] = ["default"],  # noqa: B006 - the agreed signature; never mutated
    user_role: str = "jupyter-pai-user",
    cluster_reader_role: str = "jupyter-pai-cluster-reader",
    namespace_prefix: str = "",
    config_map: str | None = "jupyter-pai-config",
    pod_security: str = "baseline",
    ingress_from: list[dict[str, Any]] | None = [],  # noqa: B006 - never mutated
) -> None:
    """Configure ``c.KubeSpawner``: a namespace per user (``<namespace_prefix><username>``)
    labelled with the VCs the user may use (``open_vcs`` and those ``vc_groups`` gives
    their JupyterHub groups), the service account ``jupyter-pai`` bound to ``user_role``
    there and to ``cluster_reader_role``, a LocalQueue per VC for ``flavor="kueue"``, and
    the ConfigMap ``config_map`` of the hub's namespace as the server's
    ``jupyter_server_config.json`` (in ``/etc/jupyter-pai``; None: none).

    The namespace enforces Pod Security level ``pod_security`` (``baseline``, or
    ``restricted`` for teams whose images run as non-root; the user's server, jobs,
    kernels and storage helpers are made to meet it), and a NetworkPolicy admits into its
    pods only its own pods, the hub's namespace and the peers in ``ingress_from``
    (NetworkPolicy ``from`` entries, e.g. a Prometheus's namespace; None: no policy). A
    namespace that exists but was not made by the hub for this user stops the spawn.
    Bad arguments raise ValueError naming the argument, when the hub loads its
    configuration."""
    settings = HubSettings(
        flavor=flavor,
        vc_groups=dict(vc_groups or {}),
        open_vcs=tuple(open_vcs),
        user_role=user_role,
        cluster_reader_role=cluster_reader_role,
        namespace_prefix=namespace_prefix,
        config_map=config_map,
        pod_security=pod_security,
        ingress_from=None if ingress_from is None else tuple(ingress_from),
    )
    spawner = c.KubeSpawner
    spawner.enable_user_namespaces = True
    spawner.user_namespace_template = namespace_prefix + "{username}"
    spawner.service_account = SERVICE_ACCOUNT
    # The server talks to the API server as that account (KubeSpawner mounts its token
    # only when asked, or when service_account is set: said explicitly here).
    spawner.automount_service_account_token = True
    # Hooks the admin set before this call still run, after ours.
    spawner.pre_spawn_hook = make_pre_spawn_hook(settings, then=_set(spawner, "pre_spawn_hook"))
    spawner.modify_pod_hook = make_modify_pod_hook(settings, then=_set(spawner, "modify_pod_hook"))


def _set(section: Any, name: str) -> Any:
    """A setting made before, else None: a traitlets Config answers a missing name with a
    placeholder rather than an error, so ask it whether it holds the name."""
    if isinstance(section, dict):
        return section[name] if name in section else None
    return getattr(section, name, None)
