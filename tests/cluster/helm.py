"""The `helm` binary the deploy tests render and lint the chart with, built from its Go
module (`helm.sh/helm/v3`, pinned) into the cluster cache, keyed by version. A warm cache
returns at once; a cold one compiles for a few minutes (`go install -p 2`)."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from . import versions
from .build import DOWNLOAD_ATTEMPTS, BuildError, find_go

HELM = "v3.22.0"
MODULE = "helm.sh/helm/v3"


def _log(message: str) -> None:
    print(f"[cluster-build] {message}", file=sys.stderr, flush=True)


def helm_dir() -> Path:
    return versions.cache_root() / f"helm-{HELM}"


def _ldflags() -> str:
    # Stamped as a release build does, so `helm version` names the pinned version.
    return f"-s -w -X {MODULE}/internal/version.version={HELM}"


def ensure_helm() -> Path:
    """The path of the pinned `helm`, building it first when the cache is cold."""
    binary = helm_dir() / "helm"
    if binary.is_file():
        return binary
    binary.parent.parent.mkdir(parents=True, exist_ok=True)
    with open(binary.parent.parent / f"helm-{HELM}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # a second caller waits for the first build
        if binary.is_file():
            return binary
        go = find_go()
        env = dict(os.environ)
        env.update(GOTOOLCHAIN="local", CGO_ENABLED="0", GOFLAGS="-buildvcs=false")
        start = time.monotonic()
        _log(f"cold cache, building helm {HELM}")
        with tempfile.TemporaryDirectory(prefix="jupyter-pai-helm-") as tmp:
            cmd = [go, "install", "-p", "2", "-trimpath", "-ldflags", _ldflags()]
            cmd.append(f"{MODULE}/cmd/helm@{HELM}")
            for attempt in range(1, DOWNLOAD_ATTEMPTS + 1):
                result = subprocess.run(cmd, env={**env, "GOBIN": tmp}, cwd=tmp)
                if result.returncode == 0:
                    break
                _log(f"go install helm failed (attempt {attempt}/{DOWNLOAD_ATTEMPTS})")
                time.sleep(min(60, 5 * 2**attempt))
            else:
                raise BuildError(f"cannot build helm {HELM} from {MODULE}")
            staging = helm_dir().with_name(helm_dir().name + ".partial")
            shutil.rmtree(staging, ignore_errors=True)
            staging.mkdir(parents=True)
            shutil.move(str(Path(tmp) / "helm"), staging / "helm")
            shutil.rmtree(helm_dir(), ignore_errors=True)
            staging.rename(helm_dir())
        _log(f"built helm in {time.monotonic() - start:.0f}s into {binary}")
    return binary


CHART = Path(__file__).resolve().parents[2] / "deploy" / "helm" / "jupyter-pai"
FLAVORS = ("native", "volcano", "kueue", "hived")
ROLE_NAMES = ("jupyter-pai-user", "jupyter-pai-cluster-reader")


def chart_user_roles(flavors: tuple[str, ...] = FLAVORS) -> list[dict[str, Any]]:
    """The chart's ClusterRoles jupyter-pai-user and jupyter-pai-cluster-reader for a
    cluster that serves every one of ``flavors`` at once (the test cluster): each flavor's
    rendering (`helm template`), their rules merged per API group and resource. The chart
    itself renders one flavor, as a team's cluster runs one."""
    verbs: dict[str, dict[tuple[str, str], set[str]]] = {name: {} for name in ROLE_NAMES}
    for flavor in flavors:
        text = subprocess.run(
            [
                str(ensure_helm()),
                "template",
                "jupyter-pai",
                str(CHART),
                "--kube-version",
                versions.KUBERNETES.lstrip("v"),
                "--show-only",
                "templates/rbac-user.yaml",
                "--set",
                f"flavor={flavor}",
                # Rendering needs it; the VCs it names are not used here.
                "--set",
                "hived.vcCellType=unused",
            ],
            capture_output=True,
            text=True,
            check=True,
            timeout=120,
        ).stdout
        for doc in yaml.safe_load_all(text):
            if not doc or doc["kind"] != "ClusterRole":
                continue
            merged = verbs[doc["metadata"]["name"]]
            for rule in doc["rules"]:
                for group in rule["apiGroups"]:
                    for resource in rule["resources"]:
                        merged.setdefault((group, resource), set()).update(rule["verbs"])
    return [
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": name, "labels": {"app.kubernetes.io/name": "jupyter-pai"}},
            "rules": [
                {"apiGroups": [group], "resources": [resource], "verbs": sorted(vs)}
                for (group, resource), vs in sorted(verbs[name].items())
            ],
        }
        for name in ROLE_NAMES
    ]
