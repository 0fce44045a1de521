"""A container's environment and command line, resolved as the kubelet would: plain
values with $(VAR) expansion, field and resource references, ConfigMap and Secret keys,
and envFrom."""

from __future__ import annotations

import base64
import math
import re
from collections.abc import Callable
from typing import Any

from kubernetes.client.exceptions import ApiException

Obj = dict[str, Any]
# Reads a ConfigMap or Secret: (kind, namespace, name) -> its data, or None if absent.
Lookup = Callable[[str, str, str], dict[str, str] | None]

_REF = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)")


class EnvError(Exception):
    """A reference that cannot be resolved (the kubelet reports CreateContainerConfigError)."""


def expand(text: str, env: dict[str, str]) -> str:
    """Kubernetes $(VAR) expansion: defined names are replaced, `$$` escapes a `$`."""

    def replace(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        name = match.group(1)
        return env.get(name, match.group(0))

    return _REF.sub(replace, text)


def _field(pod: Obj, path: str) -> str:
    meta, spec, status = pod["metadata"], pod["spec"], pod.get("status") or {}
    subscript = re.fullmatch(r"metadata\.(labels|annotations)\['(.+)'\]", path)
    if subscript:
        return str((meta.get(subscript.group(1)) or {}).get(subscript.group(2), ""))
    if path in ("metadata.labels", "metadata.annotations"):
        items = meta.get(path.split(".")[1]) or {}
        return "\n".join(f'{k}="{v}"' for k, v in sorted(items.items()))
    simple = {
        "metadata.name": meta.get("name"),
        "metadata.namespace": meta.get("namespace"),
        "metadata.uid": meta.get("uid"),
        "spec.nodeName": spec.get("nodeName"),
        "spec.serviceAccountName": spec.get("serviceAccountName"),
        "status.podIP": status.get("podIP"),
        "status.hostIP": status.get("hostIP"),
        "status.podIPs": ",".join(ip["ip"] for ip in status.get("podIPs") or []),
        "status.hostIPs": ",".join(ip["ip"] for ip in status.get("hostIPs") or []),
    }
    if path not in simple:
        raise EnvError(f"unsupported fieldRef {path!r}")
    return str(simple[path] or "")


_SUFFIXES = {
    "Ki": 2**10,
    "Mi": 2**20,
    "Gi": 2**30,
    "Ti": 2**40,
    "Pi": 2**50,
    "Ei": 2**60,
    "n": 1e-9,
    "u": 1e-6,
    "m": 1e-3,
    "k": 1e3,
    "M": 1e6,
    "G": 1e9,
    "T": 1e12,
    "P": 1e15,
    "E": 1e18,
}


def quantity(text: str) -> float:
    match = re.fullmatch(r"([0-9.eE+-]+?)([a-zA-Z]*)", str(text))
    if not match:
        raise EnvError(f"bad quantity {text!r}")
    number, suffix = match.groups()
    return float(number) * _SUFFIXES.get(suffix, 1)


def _resource(container: Obj, ref: Obj) -> str:
    kind, _, name = ref["resource"].partition(".")
    value = ((container.get("resources") or {}).get(kind) or {}).get(name)
    if value is None:  # the kubelet falls back to node allocatable; "0" is good enough here
        return "0"
    divisor = quantity(ref.get("divisor") or "1")
    return str(math.ceil(quantity(value) / divisor))


def _key(lookup: Lookup, kind: str, namespace: str, ref: Obj) -> str | None:
    data = lookup(kind, namespace, ref["name"])
    if data is None or ref["key"] not in data:
        if ref.get("optional"):
            return None
        raise EnvError(f"{kind} {ref['name']!r} key {ref['key']!r} not found")
    return data[ref["key"]]


# HiveD writes the GPUs (leaf cells) it bound a pod to on the pod: "0,1".
HIVED_ISOLATION = "hivedscheduler.microsoft.com/pod-leaf-cell-isolation"


def gpu_env(pod: Obj) -> dict[str, str]:
    """What a GPU container runtime would give the process: the devices HiveD chose, as
    `CUDA_VISIBLE_DEVICES` (the pod's own env may still set it)."""
    isolation = ((pod.get("metadata") or {}).get("annotations") or {}).get(HIVED_ISOLATION)
    # NVIDIA_VISIBLE_DEVICES=void: the runtime gives no GPU (a task on HiveD's CPU cells,
    # whose indices are not devices).
    void = any(
        var.get("name") == "NVIDIA_VISIBLE_DEVICES" and var.get("value") == "void"
        for c in (pod.get("spec") or {}).get("containers") or []
        for var in c.get("env") or []
    )
    return {"CUDA_VISIBLE_DEVICES": isolation} if isolation is not None and not void else {}


def _referenced(
    lookup: Lookup, kind: str, namespace: str, ref: Obj | None
) -> dict[str, str] | None:
    """The data of the ConfigMap or Secret ``ref`` names; None for no reference or a
    missing optional one; a missing required one stops the container as kubelet does."""
    if ref is None:
        return None
    data = lookup(kind, namespace, ref["name"])
    if data is None and not ref.get("optional"):
        raise EnvError(f"{kind} {ref['name']!r} not found")
    return data


def container_env(pod: Obj, container: Obj, lookup: Lookup) -> dict[str, str]:
    """The variables the container sees, in Kubernetes' order: envFrom, then env."""
    namespace = pod["metadata"]["namespace"]
    env: dict[str, str] = {}
    for source in container.get("envFrom") or []:
        prefix = source.get("prefix", "")
        for kind, field in (("ConfigMap", "configMapRef"), ("Secret", "secretRef")):
            data = _referenced(lookup, kind, namespace, source.get(field))
            env.update({prefix + k: v for k, v in (data or {}).items()})
    for var in container.get("env") or []:
        name, source = var["name"], var.get("valueFrom")
        if source is None:
            env[name] = expand(var.get("value") or "", env)
        elif "fieldRef" in source:
            env[name] = _field(pod, source["fieldRef"]["fieldPath"])
        elif "resourceFieldRef" in source:
            env[name] = _resource(container, source["resourceFieldRef"])
        elif "configMapKeyRef" in source:
            value = _key(lookup, "ConfigMap", namespace, source["configMapKeyRef"])
            if value is not None:
                env[name] = value
        elif "secretKeyRef" in source:
            value = _key(lookup, "Secret", namespace, source["secretKeyRef"])
            if value is not None:
                env[name] = value
    return env


def container_argv(container: Obj, env: dict[str, str]) -> list[str]:
    """command + args with $(VAR) expanded; empty when the image's entrypoint would run."""
    return [
        expand(part, env)
        for part in (container.get("command") or []) + (container.get("args") or [])
    ]


def api_lookup(core: Any) -> Lookup:
    """A Lookup reading ConfigMaps and Secrets through a CoreV1Api."""

    def lookup(kind: str, namespace: str, name: str) -> dict[str, str] | None:
        try:
            if kind == "ConfigMap":
                cm = core.read_namespaced_config_map(name, namespace)
                return dict(cm.data or {})
            secret = core.read_namespaced_secret(name, namespace)
            return {k: base64.b64decode(v).decode() for k, v in (secret.data or {}).items()}
        except ApiException as error:
            if error.status == 404:
                return None
            raise

    return lookup


def claim_volumes(pod: Obj) -> dict[str, tuple[str, bool]]:
    """The pod's persistentVolumeClaim volumes: volume name -> (claim name, readOnly)."""
    return {
        volume["name"]: (
            volume["persistentVolumeClaim"]["claimName"],
            bool(volume["persistentVolumeClaim"].get("readOnly")),
        )
        for volume in pod["spec"].get("volumes") or []
        if volume.get("persistentVolumeClaim")
    }


def rewrite_mounts(argv: list[str], mounts: dict[str, str]) -> list[str]:
    """Each argument that is a mountPath or lies under one, pointed at the local view of
    that volume: processes share this host's filesystem, so `/storage` cannot exist."""
    out = []
    for arg in argv:
        for mount_path in sorted(mounts, key=len, reverse=True):  # the deepest mount wins
            prefix = mount_path.rstrip("/")
            if arg == prefix or arg.startswith(prefix + "/"):
                arg = mounts[mount_path] + arg[len(prefix) :]
                break
        out.append(arg)
    return out


# Asks the API for a service account token: (audience or None for the API server's
# own, expirationSeconds) -> the token.
TokenSource = Callable[[str | None, int], str]


def file_volumes(pod: Obj) -> dict[str, list[Obj]]:
    """The pod's volumes whose files kubelet writes itself, as projected sources: name ->
    sources. Projected volumes (the service account's `kube-api-access-…`, which the
    ServiceAccount admission plugin adds unless `automountServiceAccountToken` is false)
    as they are; a `configMap` or `secret` volume as the one source it is."""
    out: dict[str, list[Obj]] = {}
    for volume in pod["spec"].get("volumes") or []:
        if "projected" in volume:
            out[volume["name"]] = (volume["projected"] or {}).get("sources") or []
        elif "configMap" in volume:
            out[volume["name"]] = [{"configMap": volume["configMap"]}]
        elif "secret" in volume:
            secret = dict(volume["secret"])
            secret["name"] = secret.pop("secretName")
            out[volume["name"]] = [{"secret": secret}]
    return out


def projected_files(
    pod: Obj, sources: list[Obj], lookup: Lookup, token: TokenSource
) -> dict[str, str]:
    """A projected volume's files (path -> text), as the kubelet writes them: a token from
    the TokenRequest API, ConfigMap/Secret keys (the cluster CA from `kube-root-ca.crt`)
    and downward API fields (the namespace)."""
    namespace = pod["metadata"]["namespace"]
    files: dict[str, str] = {}
    for source in sources:
        if "serviceAccountToken" in source:
            sa = source["serviceAccountToken"]
            files[sa["path"]] = token(sa.get("audience"), int(sa.get("expirationSeconds") or 3600))
            continue
        for kind, field in (("ConfigMap", "configMap"), ("Secret", "secret")):
            ref = source.get(field)
            data = _referenced(lookup, kind, namespace, ref)
            if ref is None or data is None:
                continue
            items = ref.get("items") or [{"key": k, "path": k} for k in data]
            for item in items:
                if item["key"] not in data:
                    raise EnvError(f"{kind} {ref['name']!r} key {item['key']!r} not found")
                files[item["path"]] = data[item["key"]]
        for item in (source.get("downwardAPI") or {}).get("items") or []:
            if "fieldRef" not in item:
                raise EnvError(f"unsupported downwardAPI item {item['path']!r}")
            files[item["path"]] = _field(pod, item["fieldRef"]["fieldPath"])
    return files
