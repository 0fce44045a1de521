"""An OCI distribution registry (``/v2/``): its catalogue, a repository's tags, and what one
tag is (created, size, labels) read from its manifest and config blob."""

from __future__ import annotations

import hashlib
import json
import re
from datetime import datetime, timezone
from typing import Any
from urllib.parse import quote

from .auth import RegistryError, Response, Transport
from .models import ImageTag
from .settings import RegistrySettings

INDEX_TYPES = (
    "application/vnd.oci.image.index.v1+json",
    "application/vnd.docker.distribution.manifest.list.v2+json",
)
MANIFEST_TYPES = (
    "application/vnd.oci.image.manifest.v1+json",
    "application/vnd.docker.distribution.manifest.v2+json",
)
ACCEPT = ", ".join(MANIFEST_TYPES + INDEX_TYPES)
#: a repository's tags listed at most (a runaway registry cannot loop forever)
MAX_LISTED = 10_000
MAX_CACHED_CONFIGS = 20_000
_DIGEST = re.compile(r"[a-z0-9]+(?:[+._-][a-z0-9]+)*:[a-fA-F0-9]{32,}")
_LINK = re.compile(r"<([^>]+)>\s*;\s*rel=\"?next\"?")

_CUDA_LABELS = ("com.nvidia.cuda.version", "ai.cuda.version", "cuda.version", "cuda_version")
_CUDA_ENV = ("CUDA_VERSION",)
_FRAMEWORK_LABELS = {
    "com.nvidia.pytorch.version": "pytorch",
    "com.nvidia.tensorflow.version": "tensorflow",
    "com.nvidia.jax.version": "jax",
    "com.nvidia.mxnet.version": "mxnet",
}
_FRAMEWORK_ENV = {
    "PYTORCH_VERSION": "pytorch",
    "TENSORFLOW_VERSION": "tensorflow",
    "JAX_VERSION": "jax",
    "MXNET_VERSION": "mxnet",
    "PADDLE_VERSION": "paddlepaddle",
}


def next_link(response: Response) -> str | None:
    """The ``Link: <…>; rel="next"`` of a paged answer."""
    match = _LINK.search(response.headers.get("link", ""))
    return match.group(1) if match else None


def parse_time(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    text = value.strip().replace("Z", "+00:00")
    # Go writes nanoseconds; Python reads at most microseconds.
    text = re.sub(r"(\.\d{6})\d+", r"\1", text)
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return None
    if parsed.year <= 1:  # Go's zero time: unknown
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)


def gpu_facts(labels: dict[str, str], env: dict[str, str]) -> tuple[str | None, str | None]:
    """(cuda, framework) an image says about itself in labels or environment."""
    cuda = next((labels[k] for k in _CUDA_LABELS if labels.get(k)), None)
    cuda = cuda or next((env[k] for k in _CUDA_ENV if env.get(k)), None)
    framework = labels.get("ai.framework") or None
    if framework is None:
        for key, name in _FRAMEWORK_LABELS.items():
            if labels.get(key):
                framework = f"{name} {labels[key]}"
                break
    if framework is None:
        for key, name in _FRAMEWORK_ENV.items():
            if env.get(key):
                framework = f"{name} {env[key]}"
                break
    return cuda, framework


def natural_key(name: str) -> tuple[tuple[int, int | str], ...]:
    """Version-aware order: ``2.10`` after ``2.9``."""
    parts = re.findall(r"\d+|\D+", name)
    return tuple((1, int(p)) if p.isdigit() else (0, p) for p in parts)


def _json(response: Response, what: str) -> Any:
    try:
        return json.loads(response.body)
    except ValueError:
        raise RegistryError(f"{what} is not JSON") from None


class OciClient:
    def __init__(
        self, settings: RegistrySettings, transport: Transport, *, page_size: int = 100
    ) -> None:
        self.settings, self.transport, self.page_size = settings, transport, page_size
        #: config blobs by digest (immutable): later rounds ask only for manifests
        self._configs: dict[str, dict[str, Any]] = {}

    async def repositories(self, limit: int) -> tuple[list[str], bool]:
        """Up to ``limit`` repository names, and whether more were left out."""
        names: list[str] = list(self.settings.repositories)
        if names:
            return names[:limit], len(names) > limit
        url: str | None = f"/v2/_catalog?n={self.page_size}"
        while url is not None:
            response = await self.transport.get(url, scope="registry:catalog:*")
            page = _json(response, f"{self.settings.url}/v2/_catalog").get("repositories") or []
            names.extend(str(n) for n in page)
            if len(names) >= limit:
                return names[:limit], len(names) > limit or next_link(response) is not None
            url = next_link(response)
        return names, False

    async def tags(self, repository: str) -> list[str]:
        """Every tag name of ``repository`` (NotFoundError when there is no such repository)."""
        names: list[str] = []
        url: str | None = f"/v2/{quote(repository)}/tags/list?n={self.page_size}"
        while url is not None and len(names) < MAX_LISTED:
            response = await self.transport.get(url, scope=f"repository:{repository}:pull")
            names.extend(str(t) for t in _json(response, f"{repository}'s tags").get("tags") or [])
            url = next_link(response)
        return names

    async def describe(self, repository: str, tag: str) -> ImageTag:
        scope = f"repository:{repository}:pull"
        uri = f"{self.settings.host}/{repository}:{tag}"
        response = await self.transport.get(
            f"/v2/{quote(repository)}/manifests/{quote(tag)}", scope=scope, accept=ACCEPT
        )
        digest = response.headers.get("docker-content-digest") or (
            "sha256:" + hashlib.sha256(response.body).hexdigest()
        )
        manifest = _json(response, f"{uri}'s manifest")
        annotations: dict[str, str] = {}
        media = manifest.get("mediaType") or response.headers.get("content-type", "").split(";")[0]
        if media in INDEX_TYPES or "manifests" in manifest:
            annotations.update(_strings(manifest.get("annotations")))
            chosen = _pick_platform(manifest.get("manifests") or [])
            if chosen is None:
                return ImageTag(name=tag, uri=uri, digest=digest, labels=annotations)
            response = await self.transport.get(
                f"/v2/{quote(repository)}/manifests/{chosen}", scope=scope, accept=ACCEPT
            )
            manifest = _json(response, f"{uri}'s manifest")
        annotations.update(_strings(manifest.get("annotations")))
        config_desc = manifest.get("config") or {}
        layers = manifest.get("layers") or []
        size: int | None = None
        if isinstance(config_desc.get("size"), int) and all(
            isinstance(x.get("size"), int) for x in layers
        ):
            size = int(config_desc["size"]) + sum(int(x["size"]) for x in layers)
        config: dict[str, Any] = {}
        config_digest = config_desc.get("digest")
        if isinstance(config_digest, str) and _DIGEST.fullmatch(config_digest):
            config = await self._config(repository, config_digest, uri)
        inner = config.get("config") or {}
        labels = {**_strings(inner.get("Labels")), **annotations}
        env = dict(
            e.split("=", 1) for e in inner.get("Env") or [] if isinstance(e, str) and "=" in e
        )
        cuda, framework = gpu_facts(labels, env)
        created = parse_time(config.get("created")) or parse_time(
            annotations.get("org.opencontainers.image.created")
        )
        return ImageTag(
            name=tag,
            uri=uri,
            digest=digest,
            created=created,
            size=size,
            labels=labels,
            cuda=cuda,
            framework=framework,
        )

    async def _config(self, repository: str, digest: str, uri: str) -> dict[str, Any]:
        cached = self._configs.get(digest)
        if cached is not None:
            return cached
        blob = await self.transport.get(
            f"/v2/{quote(repository)}/blobs/{digest}", scope=f"repository:{repository}:pull"
        )
        parsed = _json(blob, f"{uri}'s config")
        # Only what a tag shows is kept, so the cache stays small.
        inner = (parsed.get("config") or {}) if isinstance(parsed, dict) else {}
        kept = {
            "created": parsed.get("created") if isinstance(parsed, dict) else None,
            "config": {"Labels": inner.get("Labels"), "Env": inner.get("Env")},
        }
        if len(self._configs) >= MAX_CACHED_CONFIGS:
            self._configs.pop(next(iter(self._configs)))
        self._configs[digest] = kept
        return kept


def _strings(value: Any) -> dict[str, str]:
    if not isinstance(value, dict):
        return {}
    return {str(k): str(v) for k, v in value.items() if v is not None}


def _pick_platform(manifests: list[Any]) -> str | None:
    """The linux/amd64 entry of an index (else the first image that is not an attestation)."""
    usable = [
        m
        for m in manifests
        if isinstance(m, dict)
        and isinstance(m.get("digest"), str)
        and _DIGEST.fullmatch(m["digest"])
        and (m.get("platform") or {}).get("os") != "unknown"
    ]
    for entry in usable:
        platform = entry.get("platform") or {}
        if platform.get("os") == "linux" and platform.get("architecture") == "amd64":
            return str(entry["digest"])
    return str(usable[0]["digest"]) if usable else None
