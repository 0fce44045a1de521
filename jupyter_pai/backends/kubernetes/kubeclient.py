"""The parts of kubernetes_asyncio the backend uses, without the rest.

``kubernetes_asyncio.client``'s ``__init__`` imports every API class and model of the
Kubernetes API (about 1,900 modules: 60 MB of a server's memory and half a second of its
start), though the backend only sends requests and reads JSON (:mod:`.rest`) and opens
websockets (port-forward, exec). Where this process has not imported kubernetes_asyncio
yet, its packages are entered as empty shells and only the modules used are loaded. A
shell loads its real ``__init__`` the first time anything else of it is asked for, so
other code in the process (``from kubernetes_asyncio.client import V1Pod``) works as
usual, only later.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import threading
import types
from typing import Any

#: The packages whose ``__init__`` would import what the backend does not use.
_SHELLS = (
    "kubernetes_asyncio",
    "kubernetes_asyncio.client",
    "kubernetes_asyncio.client.api",
    "kubernetes_asyncio.client.models",
)
_lock = threading.RLock()


class _Shell(types.ModuleType):
    """A package whose ``__init__`` runs only when a name it would define is asked for."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name not in ("__all__", "__version__"):
            raise AttributeError(name)  # what tools probe for (__wrapped__…): not the package's
        if self._submodule(name):  # a module of the package: that one alone
            return importlib.import_module(f"{self.__name__}.{name}")
        with _lock:
            if not self.__dict__.get("_completed"):
                self.__dict__["_completed"] = True
                spec = self.__spec__
                assert spec is not None and spec.loader is not None
                spec.loader.exec_module(self)
        try:
            return self.__dict__[name]
        except KeyError:
            raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}") from None

    def _submodule(self, name: str) -> bool:
        return any(
            os.path.exists(os.path.join(folder, name + ".py"))
            or os.path.isdir(os.path.join(folder, name))
            for folder in self.__dict__.get("__path__", ())
        )


def _enter_shells() -> None:
    with _lock:
        if "kubernetes_asyncio" in sys.modules:
            return  # imported already, whole: nothing to save
        for name in _SHELLS:
            spec = importlib.util.find_spec(name)
            if spec is None or spec.submodule_search_locations is None:
                raise ImportError(f"{name} is not installed")
            shell = _Shell(name)
            shell.__spec__ = spec
            shell.__path__ = list(spec.submodule_search_locations)
            shell.__file__ = spec.origin
            shell.__loader__ = spec.loader
            shell.__package__ = name
            sys.modules[name] = shell
            above, _, short = name.rpartition(".")
            if above:
                setattr(sys.modules[above], short, shell)
        client = sys.modules["kubernetes_asyncio.client"]
        # What the loaded modules import from the client package itself.
        from kubernetes_asyncio.client import api_client, configuration, exceptions, rest

        client.__dict__.update(
            ApiClient=api_client.ApiClient,
            Configuration=configuration.Configuration,
            ApiException=exceptions.ApiException,
            rest=rest,
            api_client=api_client,
            configuration=configuration,
            exceptions=exceptions,
        )


_enter_shells()

from kubernetes_asyncio import config  # noqa: E402
from kubernetes_asyncio.client.api_client import ApiClient  # noqa: E402
from kubernetes_asyncio.client.configuration import Configuration  # noqa: E402
from kubernetes_asyncio.config.config_exception import ConfigException  # noqa: E402
from kubernetes_asyncio.stream.ws_client import WsApiClient  # noqa: E402

__all__ = ["ApiClient", "ConfigException", "Configuration", "WsApiClient", "config"]
