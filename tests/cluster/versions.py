"""Versions of the control-plane pieces and where their binaries are cached."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

KUBERNETES = "v1.36.3"
ETCD = "v3.6.8"
KWOK = "v0.8.0"
# Volcano is not built here (the module proxy refuses volcano.sh/*): its prebuilt,
# checksummed binaries come from a folder (see `volcano.source_dir`).
VOLCANO = "v1.15.1"
# Kueue and JobSet likewise (`prebuilt.py`).
KUEUE = "v0.19.2"
JOBSET = "v0.12.0"
# HiveD: upstream's last commit (2020), no release tag.
HIVED = "66f26ac"

GOMOD_DIR = Path(__file__).parent / "gomod"

# Binaries the build produces; each must exist in a warm cache.
BINARIES = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok")


def versions_key() -> str:
    """Cache key: the versions plus a digest of the wrapper module (a changed go.mod rebuilds)."""
    digest = hashlib.sha256()
    for path in sorted(GOMOD_DIR.rglob("*")):
        if path.is_file():
            digest.update(path.relative_to(GOMOD_DIR).as_posix().encode())
            digest.update(path.read_bytes())
    return f"k8s-{KUBERNETES}_etcd-{ETCD}_kwok-{KWOK}_{digest.hexdigest()[:12]}"


def cache_root() -> Path:
    default = Path.home() / ".cache" / "jupyter-pai" / "cluster"
    return Path(os.environ.get("JUPYTER_PAI_CLUSTER_CACHE", default))


def bin_dir() -> Path:
    return cache_root() / versions_key() / "bin"


def assets_dir() -> Path:
    return cache_root() / versions_key() / "assets"


def volcano_dir(digest: str) -> Path:
    """Volcano's unpacked binaries and deployment files; `digest` is that of its
    SHA256SUMS.binaries, so other binaries of the same version do not share a cache."""
    return cache_root() / f"volcano-{VOLCANO}_{digest[:12]}"
