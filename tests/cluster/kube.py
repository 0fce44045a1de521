"""Small helpers over the `kubernetes` client for creating the cluster's objects."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from kubernetes import client, config, dynamic
from kubernetes.client.exceptions import ApiException

# The client's models make every field Optional; code here reads them as Any.
_new_client: Any = config.new_client_from_config
_DynamicClient: Any = dynamic.DynamicClient


def api_client(kubeconfig: Path) -> Any:
    """A `kubernetes.client.ApiClient` for the kubeconfig."""
    return _new_client(config_file=str(kubeconfig))


def core(api: Any) -> Any:
    """CoreV1Api over `api` (typed Any: its models are Optional everywhere)."""
    return client.CoreV1Api(api)


def batch(api: Any) -> Any:
    return client.BatchV1Api(api)


def custom(api: Any) -> Any:
    return client.CustomObjectsApi(api)


def apply(api: Any, manifests: Iterable[dict[str, Any]]) -> None:
    """Create each object; an object that already exists is left as it is."""
    dyn = _DynamicClient(api)
    for manifest in manifests:
        resource = dyn.resources.get(api_version=manifest["apiVersion"], kind=manifest["kind"])
        namespace = manifest["metadata"].get("namespace")
        try:
            resource.create(body=manifest, namespace=namespace)
        except ApiException as error:
            if error.status != 409:
                raise


def crds_established(api: Any, crds: list[dict[str, Any]]) -> bool:
    ext = client.ApiextensionsV1Api(api)
    for crd in crds:
        status = ext.read_custom_resource_definition(crd["metadata"]["name"]).status
        conditions = (status.conditions if status else None) or []
        if not any(c.type == "Established" and c.status == "True" for c in conditions):
            return False
    return True


def delete_nodes(api: Any, names: Iterable[str]) -> None:
    for name in names:
        try:
            core(api).delete_node(name)
        except ApiException as error:
            if error.status != 404:
                raise


def write_kubeconfig(
    path: Path, server: str, ca_file: Path, user: str, token: str, namespace: str
) -> None:
    import yaml

    document = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "jupyter-pai-test",
                "cluster": {"server": server, "certificate-authority": str(ca_file)},
            }
        ],
        "users": [{"name": user, "user": {"token": token}}],
        "contexts": [
            {
                "name": user,
                "context": {"cluster": "jupyter-pai-test", "user": user, "namespace": namespace},
            }
        ],
        "current-context": user,
    }
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    path.chmod(0o600)
