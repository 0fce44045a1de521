"""Settings shared by every surface (server, CLI, magics, kernels) and the backend factory.

The backend is picked by name from the ``jupyter_pai.backends`` entry point group, so a
third party can add one without touching this package."""

from __future__ import annotations

import os
from importlib.metadata import entry_points
from typing import Any, cast
from urllib.parse import urlsplit

from traitlets import Bool, Dict, Float, Int, List, Type, Unicode, default
from traitlets.config import Config, Configurable

from .backends.base import Backend

# What the entry points say when the package is installed; used from a bare source tree too.
BUILTIN_BACKENDS = {
    "local": "jupyter_pai.backends.local:LocalBackend",
    "kubernetes": "jupyter_pai.backends.kubernetes:KubernetesBackend",
}

DEFAULT_IMAGES: list[dict[str, Any]] = [
    {
        "name": "pytorch-2.4",
        "uri": "pytorch/pytorch:2.4.0-cuda12.1-cudnn9-runtime",
        "description": "PyTorch 2.4, CUDA 12.1, cuDNN 9",
    },
    {
        "name": "tensorflow-2.16",
        "uri": "tensorflow/tensorflow:2.16.1-gpu",
        "description": "TensorFlow 2.16 with GPU support",
    },
    {
        "name": "python-3.11",
        "uri": "python:3.11-slim",
        "description": "Plain Python 3.11 (CPU jobs)",
        "gpu": False,
    },
]


class PAIConfig(Configurable):
    backend = Unicode(
        help="""Which backend runs jobs: ``local`` (processes on this machine, the default) or
        ``kubernetes``; any name registered in the ``jupyter_pai.backends`` entry point group.
        Default: $JUPYTER_PAI_BACKEND, else ``local``.""",
    ).tag(config=True)

    @default("backend")
    def _default_backend(self) -> str:
        return os.environ.get("JUPYTER_PAI_BACKEND") or "local"

    backend_class = Type(
        None,
        klass=Backend,
        allow_none=True,
        help="A Backend subclass to use instead of looking :attr:`backend` up by name.",
    ).tag(config=True)

    images = List(
        Dict(),
        help="""The image catalogue shown in pickers: ``[{"name", "uri", "description",
        "gpu"}]``.""",
    ).tag(config=True)

    @default("images")
    def _default_images(self) -> list[dict[str, Any]]:
        return [dict(i) for i in DEFAULT_IMAGES]

    image_registries = List(
        Dict(),
        help="""Registries whose repositories and tags every image picker offers, listed live:
        ``[{"url": "http://127.0.0.1:5000", "kind": "oci"}]``. Each: ``url``; ``kind``
        (``oci``: any OCI Distribution registry, or ``harbor``: Harbor's API v2.0, with scan
        results); ``name``; ``repositories`` (oci) or ``projects`` (harbor) to list only those;
        ``credentials``: ``{"file": PATH}`` (JSON with ``username`` and ``password``, or a
        Docker ``config.json``) or ``{"secret": NAME}`` (a Kubernetes Secret in the user's
        namespace); ``pullSecret``: the Secret pods pull this registry's images with;
        ``insecure``: skip TLS verification. Credentials never reach the browser.""",
    ).tag(config=True)

    custom_images = Bool(
        True,
        help="""Whether users may run any image reference they type. False: only the images
        of :attr:`images` and of :attr:`image_registries`.""",
    ).tag(config=True)

    image_refresh_seconds = Float(
        300.0,
        help="""How often the registries are listed again in the background; a registry that
        does not answer keeps its last list, and the pickers say so.""",
    ).tag(config=True)

    gc_thresholds = List(
        Int(),
        [50000, 20, 100],
        help="""The Python garbage collector's thresholds (``gc.set_threshold``) in the Jupyter
        server this extension runs in; empty: Python's own (700, 10, 10). A server with
        thousands of jobs holds some 20 tracked objects per job in its caches, and each full
        collection walks them all while every request waits: collecting less often takes
        the p99 of a loaded server's requests from about 210 ms to under 100 ms (figures in
        the benchmarks' docs), for a few MB more kept between collections.""",
    ).tag(config=True)
    storage_piece_bytes = Int(
        64 * 1024 * 1024,
        help="""The most bytes one request may upload into a storage. A bigger file is sent in
        pieces (``Content-Range``), each of them at most this size, and a cut upload resumes
        at its last piece. The panel, the drives and the notebook client send pieces of this
        size or less.""",
    ).tag(config=True)

    def image_pull_secrets(self) -> dict[str, str]:
        """Registry host → the Secret pods pull its images with (each ``pullSecret``)."""
        found = {}
        for entry in self.image_registries:
            secret = entry.get("pullSecret") or entry.get("pull_secret")
            host = urlsplit(str(entry.get("url", ""))).netloc
            if secret and host:
                found[host] = str(secret)
        return found

    def backend_type(self) -> type[Backend]:
        if self.backend_class is not None:
            return self.backend_class
        found = {ep.name: ep for ep in entry_points(group="jupyter_pai.backends")}
        if self.backend in found:
            loaded: type[Backend] = found[self.backend].load()
            return loaded
        target = BUILTIN_BACKENDS.get(self.backend)
        if target is None:
            known = sorted(set(found) | set(BUILTIN_BACKENDS))
            raise ValueError(
                f"PAIConfig.backend is {self.backend!r}; choose one of {', '.join(known)}"
            )
        module, _, attr = target.partition(":")
        imported = __import__(module, fromlist=[attr])
        return cast("type[Backend]", getattr(imported, attr))

    def make_backend(self, **kwargs: Any) -> Backend:
        cls = self.backend_type()
        pull = self.image_pull_secrets()
        if pull and "image_pull_secrets" in cls.class_trait_names():
            # The registries' pull secrets, under what the backend's own setting names.
            own = self.config.get(cls.__name__, {}).get("image_pull_secrets", {})
            kwargs.setdefault("image_pull_secrets", {**pull, **own})
        return cls(config=self.config, **kwargs)


def load_config() -> Config:
    """``jupyter_pai_config.py`` / ``.json`` from Jupyter's config path, for the CLI and magics."""
    from jupyter_core.paths import jupyter_config_path
    from traitlets.config.loader import ConfigFileNotFound, JSONFileConfigLoader, PyFileConfigLoader

    merged = Config()
    for folder in reversed(jupyter_config_path()):
        for loader_cls, name in (
            (JSONFileConfigLoader, "jupyter_pai_config.json"),
            (PyFileConfigLoader, "jupyter_pai_config.py"),
        ):
            try:
                merged.merge(loader_cls(name, path=folder).load_config())
            except ConfigFileNotFound:
                continue
    return merged
