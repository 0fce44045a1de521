"""What the cluster says about images: registry credentials kept in a Secret, and which
images GPU nodes already hold (``node.status.images``)."""

from __future__ import annotations

import base64
import binascii
import json
from collections import Counter
from typing import Any

from ...errors import NotFound
from ..registryauth import Credentials, credentials_for
from . import quantities
from .resources import SECRET
from .rest import ApiError, Rest, path, typed


async def secret_credentials(
    rest: Rest, namespace: str, secret: str, host: str
) -> Credentials | None:
    """``host``'s pair from a ``kubernetes.io/dockerconfigjson`` Secret, or from one with
    ``username`` and ``password`` keys."""
    try:
        found = await rest.get(path(SECRET, namespace, secret))
    except ApiError as error:
        if error.status == 404:
            raise NotFound(f"no Secret {secret!r} in namespace {namespace!r}") from None
        raise typed(error) from None
    document: dict[str, Any] = {}
    for key, value in (found.get("data") or {}).items():
        try:
            text = base64.b64decode(value).decode()
        except (binascii.Error, UnicodeDecodeError):
            continue
        if key in (".dockerconfigjson", ".dockercfg"):
            try:
                parsed = json.loads(text)
            except ValueError:
                continue
            # ``.dockercfg`` is the older form: the ``auths`` map alone.
            auths = parsed.get("auths") if key == ".dockerconfigjson" else parsed
            document["auths"] = auths
        elif key in ("username", "password"):
            document[key] = text
    return credentials_for(document, host)


def gpu_node_images(nodes: list[dict[str, Any]], gpu_resource: str) -> dict[str, int]:
    """Image name → how many nodes with GPUs list it among their images."""
    counts: Counter[str] = Counter()
    for node in nodes:
        status = node.get("status") or {}
        if quantities.parse((status.get("allocatable") or {}).get(gpu_resource, "0")) <= 0:
            continue
        names = {n for image in status.get("images") or [] for n in image.get("names") or []}
        counts.update(names)
    return dict(counts)
