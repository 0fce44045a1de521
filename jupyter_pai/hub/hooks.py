"""KubeSpawner's hooks: make sure the user's objects (:mod:`.objects`) exist before their
server starts, and give the server's pod its backend settings. They use KubeSpawner's own
asynchronous client (``spawner.api``, a ``kubernetes_asyncio`` CoreV1Api), so nothing
blocks the hub's event loop.

Idempotent: each spawn creates what is missing and corrects what changed (a group gained
or lost, so VC labels and LocalQueues follow); objects it made carry
``jupyter-pai/managed: "true"``, and only those are ever deleted. A namespace is the
user's only if the hub made it for them (that label and the user's annotation): a login
named as a system namespace, the hub's own or one an admin made stops the spawn with the
reason, and nothing is created or bound there."""

from __future__ import annotations

import inspect
import os
from collections.abc import Awaitable, Callable
from typing import Any

from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from ..backends.kubernetes import connect
from . import objects
from .objects import HubSettings, Manifest

KUEUE_GROUP, KUEUE_VERSION = objects.KUEUE_API.split("/")


class NamespaceRefused(RuntimeError):
    """The user's namespace is not one the hub may give them: the spawn stops, saying why."""


def hub_namespace() -> str:
    """Where the hub runs, as KubeSpawner finds it (its ConfigMap is there)."""
    env = os.environ.get("POD_NAMESPACE")
    if env:
        return env
    return connect.pod_namespace() or "default"


def user_namespace(settings: HubSettings, spawner: Any) -> str:
    """KubeSpawner's namespace for the user (from ``user_namespace_template``, its slug
    of the name), else ``<prefix><name>``."""
    ns = getattr(spawner, "namespace", None)
    if isinstance(ns, str) and ns:
        return ns
    return objects.namespace_name(settings, spawner.user.name)


def group_names(user: Any) -> list[str]:
    """JupyterHub's ``User.groups``: group objects with ``.name``."""
    return sorted(g.name for g in getattr(user, "groups", None) or [])


def make_pre_spawn_hook(
    settings: HubSettings, then: Callable[[Any], Any] | None = None
) -> Callable[[Any], Awaitable[None]]:
    async def pre_spawn_hook(spawner: Any) -> None:
        await ensure_user(
            settings,
            spawner.api.api_client,
            spawner.user.name,
            group_names(spawner.user),
            user_namespace(settings, spawner),
        )
        if then is not None:
            result = then(spawner)
            if inspect.isawaitable(result):
                await result

    return pre_spawn_hook


def make_modify_pod_hook(
    settings: HubSettings, then: Callable[[Any, Any], Any] | None = None
) -> Callable[[Any, Any], Any]:
    def modify_pod_hook(spawner: Any, pod: Any) -> Any:
        pod = _server_pod(spawner, pod)
        return then(spawner, pod) if then is not None else pod

    def _server_pod(spawner: Any, pod: Any) -> Any:
        namespace = user_namespace(settings, spawner)
        container = pod.spec.containers[0]  # the notebook container
        env = [e for e in container.env or [] if e.name not in ("KUBECONFIG",)]
        vcs = objects.allowed_vcs(settings, group_names(spawner.user))
        wanted = objects.server_env(settings, namespace, vcs)
        env = [e for e in env if e.name not in wanted]
        env += [client.V1EnvVar(name=k, value=v) for k, v in wanted.items()]
        container.env = env
        if settings.pod_security == "restricted":
            # The server's pod is made in the user's namespace too, so it must meet the
            # level: non-root (the image's user, e.g. jovyan), no capabilities.
            restricted_pod(pod)
        parts = objects.config_volume(settings)
        if parts is not None:
            volume, mount = parts
            pod.spec.volumes = [v for v in pod.spec.volumes or [] if v.name != volume["name"]]
            pod.spec.volumes.append(
                client.V1Volume(
                    name=volume["name"],
                    config_map=client.V1ConfigMapVolumeSource(name=volume["configMap"]["name"]),
                )
            )
            mounts = [m for m in container.volume_mounts or [] if m.name != mount["name"]]
            mounts.append(
                client.V1VolumeMount(
                    name=mount["name"], mount_path=mount["mountPath"], read_only=True
                )
            )
            container.volume_mounts = mounts
        return pod

    return modify_pod_hook


def restricted_pod(pod: Any) -> None:
    """Pod Security's ``restricted`` fields on KubeSpawner's pod (its own settings, such as
    ``uid``, stay where they meet the level). KubeSpawner gives security contexts as
    camelCase dicts or as client models: both are taken, and dicts are written back."""
    pod.spec.security_context = _merged(
        pod.spec.security_context,
        {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
    )
    for each in [*(pod.spec.init_containers or []), *pod.spec.containers]:
        ctx = _merged(
            each.security_context,
            {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}},
        )
        ctx.pop("privileged", None)
        if ctx.get("runAsUser") == 0:
            del ctx["runAsUser"]
        each.security_context = ctx


def _merged(current: Any, fields: dict[str, Any]) -> dict[str, Any]:
    if current is None:
        base: dict[str, Any] = {}
    elif isinstance(current, dict):
        base = dict(current)
    else:  # a client model: its fields by their API names
        base = _api_fields(current)
    return {**base, **fields}


def _api_fields(model: Any) -> Any:
    """A client model as the API writes it (camelCase keys, no unset fields): what the
    client's ``sanitize_for_serialization`` does, a method of an ApiClient, whose
    kubernetes_asyncio constructor opens an HTTP session: not for a pod hook to make."""
    if isinstance(model, list):
        return [_api_fields(m) for m in model]
    if not hasattr(model, "attribute_map"):
        return model
    return {
        key: _api_fields(getattr(model, attr))
        for attr, key in model.attribute_map.items()
        if getattr(model, attr) is not None
    }


async def ensure_user(
    settings: HubSettings, api: Any, username: str, groups: list[str], namespace: str
) -> None:
    """Create or correct the user's namespace, service account, bindings, LocalQueues,
    network policy and configuration copy."""
    hub_ns = hub_namespace()
    why = objects.reserved_namespace(namespace, hub_ns)
    if why is not None:
        raise NamespaceRefused(
            f"user {username!r} cannot have namespace {namespace!r}: {why} (set "
            "configure_kubespawner's namespace_prefix, or rename the user)"
        )
    # Typed Any: the client's stubs take models, and these are plain manifests.
    core: Any = client.CoreV1Api(api)
    rbac: Any = client.RbacAuthorizationV1Api(api)
    vcs = objects.allowed_vcs(settings, groups)
    ns_manifest, sa, rb, crb, *queues = objects.user_objects(settings, username, namespace, vcs)
    try:
        await core.create_namespace(ns_manifest)
    except ApiException as error:
        if error.status != 409:
            raise
        meta = (await core.read_namespace(namespace)).metadata
        if not objects.made_for(meta, username):
            raise NamespaceRefused(
                f"namespace {namespace!r} exists and was not made by jupyter-pai's hub for "
                f"user {username!r} (label {objects.MANAGED_LABEL}=true and annotation "
                f"{objects.USER_ANNOTATION}={username}): nothing is bound there. Ask your admin "
                "to delete or rename it, or to give this user another namespace_prefix"
            ) from None
        patch = objects.label_patch(settings, meta.labels or {}, username, vcs)
        if objects.changes(patch, meta.labels or {}, meta.annotations or {}):
            await core.patch_namespace(namespace, patch)
    await _create(core.create_namespaced_service_account(namespace, sa))
    await _binding(
        rb,
        create=lambda: rbac.create_namespaced_role_binding(namespace, rb),
        read=lambda: rbac.read_namespaced_role_binding(rb["metadata"]["name"], namespace),
        delete=lambda: rbac.delete_namespaced_role_binding(rb["metadata"]["name"], namespace),
    )
    await _binding(
        crb,
        create=lambda: rbac.create_cluster_role_binding(crb),
        read=lambda: rbac.read_cluster_role_binding(crb["metadata"]["name"]),
        delete=lambda: rbac.delete_cluster_role_binding(crb["metadata"]["name"]),
    )
    if settings.flavor == "kueue":
        await _sync_local_queues(api, namespace, queues)
    policy = objects.network_policy(settings, namespace, hub_ns)
    if policy is not None:
        await _network_policy(api, namespace, policy)
    if settings.config_map is not None:
        await _copy_config(core, settings, namespace, hub_ns)


async def _create(request: Awaitable[Any]) -> None:
    try:
        await request
    except ApiException as error:
        if error.status != 409:
            raise


async def _binding(
    manifest: Manifest,
    *,
    create: Callable[[], Awaitable[Any]],
    read: Callable[[], Awaitable[Any]],
    delete: Callable[[], Awaitable[Any]],
) -> None:
    """A binding as ``manifest`` says; its roleRef cannot change, so one that differs
    (the admin named another role) is deleted and made again, if the hub made it."""
    try:
        await create()
        return
    except ApiException as error:
        if error.status != 409:
            raise
    current = await read()
    labels = current.metadata.labels or {}
    if labels.get(objects.MANAGED_LABEL) != "true":
        kind, name = manifest["kind"], manifest["metadata"]["name"]
        raise ValueError(
            f"{kind} {name} exists but was not made by jupyter-pai's hub (no label "
            f"{objects.MANAGED_LABEL}=true): delete or rename it, then spawn again"
        )
    role, subjects = current.role_ref, current.subjects or []
    same_role = (role.kind, role.name) == (manifest["roleRef"]["kind"], manifest["roleRef"]["name"])
    same_subjects = [(s.kind, s.name, s.namespace) for s in subjects] == [
        (s["kind"], s["name"], s["namespace"]) for s in manifest["subjects"]
    ]
    if same_role and same_subjects:
        return
    await delete()
    await create()


async def _sync_local_queues(api: Any, namespace: str, queues: list[Manifest]) -> None:
    custom: Any = client.CustomObjectsApi(api)
    listing = await custom.list_namespaced_custom_object(
        KUEUE_GROUP,
        KUEUE_VERSION,
        namespace,
        "localqueues",
        label_selector=f"{objects.MANAGED_LABEL}=true",
    )
    wanted = {q["metadata"]["name"] for q in queues}
    for item in listing.get("items") or []:
        name = item["metadata"]["name"]
        if name not in wanted:  # the user left the group that gave this VC
            try:
                await custom.delete_namespaced_custom_object(
                    KUEUE_GROUP, KUEUE_VERSION, namespace, "localqueues", name
                )
            except ApiException as error:
                if error.status != 404:
                    raise
    for queue in queues:
        await _create(
            custom.create_namespaced_custom_object(
                KUEUE_GROUP, KUEUE_VERSION, namespace, "localqueues", queue
            )
        )


async def _network_policy(api: Any, namespace: str, policy: Manifest) -> None:
    """The policy as ``policy`` says: made, or put back where its spec drifted."""
    networking: Any = client.NetworkingV1Api(api)
    name = policy["metadata"]["name"]
    try:
        await networking.create_namespaced_network_policy(namespace, policy)
        return
    except ApiException as error:
        if error.status != 409:
            raise
    current = await networking.read_namespaced_network_policy(name, namespace)
    if api.sanitize_for_serialization(current.spec) != policy["spec"]:
        # A replace (not a merge patch): the ingress list is the policy's whole meaning.
        policy = {**policy, "metadata": {**policy["metadata"]}}
        policy["metadata"]["resourceVersion"] = current.metadata.resource_version
        await networking.replace_namespaced_network_policy(name, namespace, policy)


async def _copy_config(core: Any, settings: HubSettings, namespace: str, source_ns: str) -> None:
    assert settings.config_map is not None
    try:
        source = await core.read_namespaced_config_map(settings.config_map, source_ns)
    except ApiException as error:
        if error.status == 404:
            raise RuntimeError(
                f"ConfigMap {settings.config_map!r} not found in the hub's namespace "
                f"{source_ns!r} (configure_kubespawner config_map=…; None for none)"
            ) from None
        raise
    copy = objects.config_copy(settings, namespace, source.data or {})
    assert copy is not None
    try:
        await core.create_namespaced_config_map(namespace, copy)
    except ApiException as error:
        if error.status != 409:
            raise
        await core.replace_namespaced_config_map(settings.config_map, namespace, copy)
