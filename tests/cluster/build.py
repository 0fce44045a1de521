"""Build the control-plane binaries from Go modules into a cache keyed by versions,
and unpack Volcano's prebuilt binaries beside them.

A warm cache returns at once; a cold one downloads the modules through the module
proxy (with retries) and compiles every command in one `go build`, so shared packages
compile once. Volcano cannot be built from modules (the proxy refuses `volcano.sh/*`):
its binaries come xz-compressed from a folder and are checked against their digests.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import lzma
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from . import versions

PACKAGES = (
    "./etcd",
    "k8s.io/kubernetes/cmd/kube-apiserver",
    "k8s.io/kubernetes/cmd/kube-controller-manager",
    "k8s.io/kubernetes/cmd/kube-scheduler",
    "sigs.k8s.io/kwok/cmd/kwok",
)
DOWNLOAD_ATTEMPTS = 5


class BuildError(RuntimeError):
    pass


def _log(message: str) -> None:
    print(f"[cluster-build] {message}", file=sys.stderr, flush=True)


def find_go() -> str:
    go = shutil.which("go") or "/usr/local/go/bin/go"
    if not Path(go).is_file():
        raise BuildError("no Go toolchain: install Go >= 1.26 (go on PATH or /usr/local/go)")
    return go


def _ldflags() -> str:
    """Stamp the Kubernetes version, which the binaries otherwise report as v0.0.0-master."""
    major, minor = versions.KUBERNETES.lstrip("v").split(".")[:2]
    stamps = {
        "gitVersion": versions.KUBERNETES,
        "gitMajor": major,
        "gitMinor": minor,
        "gitTreeState": "clean",
        "buildDate": "1970-01-01T00:00:00Z",
    }
    flags = ["-s", "-w"]
    for pkg in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version"):
        flags += [f"-X {pkg}.{name}={value}" for name, value in stamps.items()]
    return " ".join(flags)


def _go_env() -> dict[str, str]:
    env = dict(os.environ)
    env.update(GOTOOLCHAIN="local", CGO_ENABLED="0", GOFLAGS="-mod=readonly -buildvcs=false")
    return env


def _download(go: str, workdir: Path, env: dict[str, str]) -> None:
    for attempt in range(1, DOWNLOAD_ATTEMPTS + 1):
        _log(f"downloading modules (attempt {attempt}/{DOWNLOAD_ATTEMPTS})")
        result = subprocess.run([go, "mod", "download"], cwd=workdir, env=env)
        if result.returncode == 0:
            return
        time.sleep(min(60, 5 * 2**attempt))
    raise BuildError("go mod download failed after retries")


def _compile(go: str, workdir: Path, out: Path, env: dict[str, str]) -> None:
    cmd = [go, "build", "-p", "2", "-v", "-trimpath", "-ldflags", _ldflags(), "-o", f"{out}/"]
    _log(f"compiling {len(PACKAGES)} commands (go build -p 2); one line per package")
    proc = subprocess.Popen(
        [*cmd, *PACKAGES], cwd=workdir, env=env, stderr=subprocess.PIPE, text=True
    )
    assert proc.stderr is not None
    count, start, tail = 0, time.monotonic(), list[str]()
    for line in proc.stderr:
        count += 1
        tail = [*tail[-40:], line.rstrip()]
        if count % 25 == 0:
            _log(f"{count} packages compiled, {time.monotonic() - start:.0f}s: {line.strip()}")
    if proc.wait() != 0:
        raise BuildError("go build failed:\n" + "\n".join(tail))


# kwok's own files the cluster reads at run time: the CRD of per-pod PortForward objects
# and its node Stages. Copied from the module cache next to the binaries.
KWOK_ASSETS = (
    "kustomize/crd/bases/kwok.x-k8s.io_portforwards.yaml",
    "kustomize/stage/node/fast/node-initialize.yaml",
    "kustomize/stage/node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
)


def _module_dir(go: str, module: str, env: dict[str, str]) -> Path:
    for attempt in range(1, DOWNLOAD_ATTEMPTS + 1):
        result = subprocess.run(
            [go, "mod", "download", "-json", module], env=env, capture_output=True, text=True
        )
        if result.returncode == 0:
            return Path(json.loads(result.stdout)["Dir"])
        _log(f"go mod download {module} failed (attempt {attempt}): {result.stdout.strip()}")
        time.sleep(min(60, 5 * 2**attempt))
    raise BuildError(f"cannot download {module}")


def ensure_assets() -> Path:
    """Return the directory of kwok's CRDs and node Stages, copying them on first use."""
    assets = versions.assets_dir()
    if (assets / ".complete").is_file():
        return assets
    env = _go_env()
    kwok_dir = _module_dir(find_go(), f"sigs.k8s.io/kwok@{versions.KWOK}", env)
    assets.mkdir(parents=True, exist_ok=True)
    for relative in KWOK_ASSETS:
        shutil.copyfile(kwok_dir / relative, assets / Path(relative).name)
    (assets / ".complete").write_text("")
    return assets


def ensure_built() -> Path:
    """Return the directory holding every binary, building it first when the cache is cold."""
    bin_dir = versions.bin_dir()
    if all((bin_dir / name).is_file() for name in versions.BINARIES):
        ensure_assets()
        return bin_dir
    bin_dir.parent.mkdir(parents=True, exist_ok=True)
    with open(bin_dir.parent / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # a second caller waits for the first build
        if all((bin_dir / name).is_file() for name in versions.BINARIES):
            return bin_dir
        go = find_go()
        start = time.monotonic()
        _log(f"cold cache, building {versions.versions_key()}")
        env = _go_env()
        with tempfile.TemporaryDirectory(prefix="jupyter-pai-cluster-build-") as tmp:
            workdir = Path(tmp) / "module"
            shutil.copytree(versions.GOMOD_DIR, workdir)
            _download(go, workdir, env)
            staging = bin_dir.parent / "bin.partial"
            shutil.rmtree(staging, ignore_errors=True)
            _compile(go, workdir, staging, env)
            missing = [n for n in versions.BINARIES if not (staging / n).is_file()]
            if missing:
                raise BuildError(f"build produced no {missing}")
            shutil.rmtree(bin_dir, ignore_errors=True)
            staging.rename(bin_dir)
        _log(f"built in {time.monotonic() - start:.0f}s into {bin_dir}")
    ensure_assets()
    return bin_dir


# -- Volcano -----------------------------------------------------------------------------

VOLCANO_DIR_ENV = "JUPYTER_PAI_VOLCANO_DIR"
VOLCANO_BINARIES = ("vc-scheduler", "vc-controller-manager", "vc-webhook-manager")
# The chart's folders that `up` reads: both CRD sets, the admission policies, the
# default scheduler configuration.
VOLCANO_CHART_PARTS = ("crd/bases", "charts/jobflow/crd/bases", "policy", "config")


def volcano_source() -> Path:
    """`$JUPYTER_PAI_VOLCANO_DIR`, else `../shared/thirdparty/volcano-<version>` beside
    the repository (a fresh clone in CI has `shared/` next to it)."""
    configured = os.environ.get(VOLCANO_DIR_ENV)
    if configured:
        return Path(configured)
    repo_root = Path(__file__).resolve().parents[2]
    return repo_root.parent / "shared" / "thirdparty" / f"volcano-{versions.VOLCANO}"


def _volcano_sums(source: Path) -> tuple[bytes, dict[str, str]]:
    sums_file = source / "SHA256SUMS.binaries"
    if not sums_file.is_file():
        where = (
            f"${VOLCANO_DIR_ENV}={source}"
            if os.environ.get(VOLCANO_DIR_ENV)
            else f"{source} (${VOLCANO_DIR_ENV} is not set)"
        )
        raise BuildError(
            f"Volcano {versions.VOLCANO} not found: no {sums_file.name} in {where}. Point "
            f"${VOLCANO_DIR_ENV} at a folder holding bin/vc-*.xz, SHA256SUMS.binaries and "
            "chart/ (shared/thirdparty/volcano-*/ of this workplace); building Volcano "
            "from its upstream tag is not supported by this script"
        )
    raw = sums_file.read_bytes()
    sums = {}
    for line in raw.decode().splitlines():
        if line.strip():
            digest, name = line.split()
            sums[name.lstrip("*")] = digest
    missing = [name for name in VOLCANO_BINARIES if name not in sums]
    if missing:
        raise BuildError(f"{sums_file} lists no digest for {missing}")
    return raw, sums


def _unxz_verified(source: Path, target: Path, expected: str) -> None:
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


def ensure_volcano() -> Path:
    """Return the directory holding Volcano's `bin/` and the chart parts `up` reads,
    unpacking and verifying them on first use. Fails (never skips) when the source
    folder is missing."""
    source = volcano_source()
    raw_sums, sums = _volcano_sums(source)
    target = versions.volcano_dir(hashlib.sha256(raw_sums).hexdigest())
    if (target / ".complete").is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / f"{target.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (target / ".complete").is_file():
            return target
        start = time.monotonic()
        _log(f"unpacking Volcano {versions.VOLCANO} from {source}")
        staging = target.with_name(target.name + ".partial")
        shutil.rmtree(staging, ignore_errors=True)
        (staging / "bin").mkdir(parents=True)
        for name in VOLCANO_BINARIES:
            packed = source / "bin" / f"{name}.xz"
            if not packed.is_file():
                raise BuildError(f"Volcano binary missing: {packed}")
            _unxz_verified(packed, staging / "bin" / name, sums[name])
        for part in VOLCANO_CHART_PARTS:
            shutil.copytree(source / "chart" / part, staging / "chart" / part)
        (staging / "SHA256SUMS.binaries").write_bytes(raw_sums)
        (staging / ".complete").write_text(str(source))
        shutil.rmtree(target, ignore_errors=True)
        staging.rename(target)
        _log(f"Volcano verified and unpacked in {time.monotonic() - start:.1f}s into {target}")
    return target
