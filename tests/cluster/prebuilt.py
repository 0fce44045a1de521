"""Prebuilt third-party components (Volcano, Kueue, JobSet): the Go module proxy refuses
their modules, so their binaries come xz-compressed from a folder (an environment
variable, else `../shared/thirdparty/<name>-<version>` beside the repository), are
checked against `SHA256SUMS.binaries` while decompressing, and are unpacked with the
deployment files `up` reads into the cluster cache, once. A missing folder or a damaged
binary fails loudly, naming where it looked."""

from __future__ import annotations

import fcntl
import hashlib
import lzma
import os
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from . import versions
from .build import BuildError


@dataclass(frozen=True)
class Component:
    title: str  # "Volcano"
    folder: str  # "volcano"
    version: str
    env: str  # the variable naming the source folder
    binaries: tuple[str, ...]
    parts: tuple[str, ...]  # folders under the source copied as they are
    # A hint of what the folder holds, for the error when it is missing.
    holds: str

    def source(self) -> Path:
        configured = os.environ.get(self.env)
        if configured:
            return Path(configured)
        repo_root = Path(__file__).resolve().parents[2]
        return repo_root.parent / "shared" / "thirdparty" / f"{self.folder}-{self.version}"

    def cache_dir(self, digest: str) -> Path:
        """Keyed by the digest of SHA256SUMS.binaries, so other binaries of the same
        version do not share a cache."""
        return versions.cache_root() / f"{self.folder}-{self.version}_{digest[:12]}"


def _log(message: str) -> None:
    print(f"[cluster-build] {message}", file=sys.stderr, flush=True)


def _sums(component: Component, source: Path) -> tuple[bytes, dict[str, str]]:
    sums_file = source / "SHA256SUMS.binaries"
    if not sums_file.is_file():
        where = (
            f"${component.env}={source}"
            if os.environ.get(component.env)
            else f"{source} (${component.env} is not set)"
        )
        raise BuildError(
            f"{component.title} {component.version} not found: no {sums_file.name} in "
            f"{where}. Point ${component.env} at a folder holding {component.holds} and "
            f"SHA256SUMS.binaries (shared/thirdparty/{component.folder}-*/ of this "
            f"workplace); building {component.title} from its upstream tag is not "
            "supported by this script"
        )
    raw = sums_file.read_bytes()
    sums = {}
    for line in raw.decode().splitlines():
        if line.strip():
            digest, name = line.split()
            sums[name.lstrip("*")] = digest
    missing = [name for name in component.binaries if name not in sums]
    if missing:
        raise BuildError(f"{sums_file} lists no digest for {missing}")
    return raw, sums


def unxz_verified(source: Path, target: Path, expected: str) -> None:
    """Decompress `source` (xz) into `target`, refusing a result whose SHA-256 differs."""
    digest = hashlib.sha256()
    with lzma.open(source) as compressed, open(target, "wb") as out:
        while chunk := compressed.read(1 << 20):
            digest.update(chunk)
            out.write(chunk)
    if digest.hexdigest() != expected:
        target.unlink()
        raise BuildError(
            f"{source}: decompressed SHA-256 {digest.hexdigest()} != {expected} "
            "(SHA256SUMS.binaries); the file is damaged or not the one built"
        )
    target.chmod(0o755)


def ensure(component: Component) -> Path:
    """The cache folder holding the component's `bin/` and its parts, unpacked and
    verified on first use (under a lock, via a `.partial` folder, so a half-unpacked
    cache is never used)."""
    source = component.source()
    raw_sums, sums = _sums(component, source)
    target = component.cache_dir(hashlib.sha256(raw_sums).hexdigest())
    if (target / ".complete").is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / f"{target.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (target / ".complete").is_file():
            return target
        start = time.monotonic()
        _log(f"unpacking {component.title} {component.version} from {source}")
        staging = target.with_name(target.name + ".partial")
        shutil.rmtree(staging, ignore_errors=True)
        (staging / "bin").mkdir(parents=True)
        for name in component.binaries:
            packed = source / "bin" / f"{name}.xz"
            if not packed.is_file():
                raise BuildError(f"{component.title} binary missing: {packed}")
            unxz_verified(packed, staging / "bin" / name, sums[name])
        for part in component.parts:
            shutil.copytree(source / part, staging / part)
        (staging / "SHA256SUMS.binaries").write_bytes(raw_sums)
        (staging / ".complete").write_text(str(source))
        shutil.rmtree(target, ignore_errors=True)
        staging.rename(target)
        elapsed = time.monotonic() - start
        _log(f"{component.title} verified and unpacked in {elapsed:.1f}s into {target}")
    return target


KUEUE = Component(
    title="Kueue",
    folder="kueue",
    version=versions.KUEUE,
    env="JUPYTER_PAI_KUEUE_DIR",
    binaries=("kueue-manager",),
    parts=("config/crd/bases", "config/webhook"),
    holds="bin/kueue-manager.xz and config/",
)
JOBSET = Component(
    title="JobSet",
    folder="jobset",
    version=versions.JOBSET,
    env="JUPYTER_PAI_JOBSET_DIR",
    binaries=("jobset-manager",),
    parts=("config/crd/bases", "config/webhook"),
    holds="bin/jobset-manager.xz and config/",
)
HIVED = Component(
    title="HiveD",
    folder="hivedscheduler",
    version=versions.HIVED,
    env="JUPYTER_PAI_HIVED_DIR",
    binaries=("hivedscheduler",),
    parts=(),
    holds="bin/hivedscheduler.xz",
)
