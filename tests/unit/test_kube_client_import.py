"""The Kubernetes backend loads only the parts of kubernetes_asyncio it uses (not the ~1,900
modules of its API classes and models), and the rest of the library still imports as usual
in the same process afterwards. Each case runs in a fresh interpreter: what one import
loaded is the point."""

from __future__ import annotations

import json
import subprocess
import sys

LEAN = """
import json, sys
import jupyter_pai.server.app
import jupyter_pai.backends.kubernetes.backend
from jupyter_pai.backends.kubernetes import kubeclient
loaded = [m for m in sys.modules if m.startswith("kubernetes_asyncio")]
print(json.dumps({
    "count": len(loaded),
    "models": [m for m in loaded if m.startswith("kubernetes_asyncio.client.models.")],
    "apis": [m for m in loaded if m.startswith("kubernetes_asyncio.client.api.")],
}))
"""

AFTERWARDS = """
import json, sys
from jupyter_pai.backends.kubernetes import kubeclient
import kubernetes_asyncio
from kubernetes_asyncio import client, config, watch
from kubernetes_asyncio.client import CoreV1Api, V1Pod
from kubernetes_asyncio.client.exceptions import ApiException
pod = V1Pod(metadata=client.V1ObjectMeta(name="p")).metadata.name
print(json.dumps({
    "version": kubernetes_asyncio.__version__,
    "same_client": client.ApiClient is kubeclient.ApiClient,
    "models": client.models.V1Pod is V1Pod,
    "pod": pod,
    "api": CoreV1Api.__name__,
    "watch": watch.Watch.__name__,
    "exception": issubclass(ApiException, Exception),
    "config": config.ConfigException is kubeclient.ConfigException,
}))
"""


def _run(code: str) -> dict:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def test_the_backend_loads_no_api_class_and_no_model() -> None:
    loaded = _run(LEAN)
    assert loaded["models"] == [] and loaded["apis"] == [], loaded
    assert loaded["count"] < 40, loaded


def test_the_rest_of_the_library_imports_as_usual_afterwards() -> None:
    seen = _run(AFTERWARDS)
    assert seen == {
        "version": seen["version"],
        "same_client": True,
        "models": True,
        "pod": "p",
        "api": "CoreV1Api",
        "watch": "Watch",
        "exception": True,
        "config": True,
    }
    assert seen["version"].count(".") == 2
