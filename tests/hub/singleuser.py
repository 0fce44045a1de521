"""The environment the JupyterHub tests' user servers run from, made the way
deploy/singleuser/Dockerfile makes the image: its base (a Jupyter Docker Stacks image:
Python with JupyterLab) stood in for by a virtual environment with JupyterLab, then the
Dockerfile's own `pip install` line, with this checkout as `jupyter-pai`. So the install
an admin's image gets is the one the end-to-end test runs, not the test session's
editable install.

Kept in the cache, keyed by the sources it installs and the Dockerfile, so a second run
with nothing changed reuses it."""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "deploy" / "singleuser" / "Dockerfile"
# What the base image brings that the Dockerfile relies on.
BASE_PACKAGES = ["jupyterlab>=4.2,<5"]
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "jupyter-pai"


def pip_line() -> list[str]:
    """The packages of the Dockerfile's `RUN pip install …`, options left out."""
    match = re.search(r"^RUN pip install (.+)$", DOCKERFILE.read_text(), re.M)
    if match is None:
        raise RuntimeError(f"{DOCKERFILE}: no 'RUN pip install' line")
    return [arg for arg in shlex.split(match.group(1)) if not arg.startswith("-")]


def _digest() -> str:
    """The Dockerfile, the package's metadata and sources, and the built lab extension."""
    h = hashlib.sha256()
    files = [DOCKERFILE, ROOT / "pyproject.toml", ROOT / "labextension" / "package.json"]
    files += sorted((ROOT / "jupyter_pai").rglob("*"))
    for path in files:
        if path.is_file() and "__pycache__" not in path.parts:
            h.update(str(path.relative_to(ROOT)).encode())
            h.update(path.read_bytes())
    return h.hexdigest()[:16]


def singleuser_env() -> Path:
    """The environment's folder (its `bin/jupyterhub-singleuser` is what pods run)."""
    env = CACHE / f"singleuser-{_digest()}"
    if (env / ".complete").exists():
        return env
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / "singleuser.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (env / ".complete").exists():
            return env
        for old in CACHE.glob("singleuser-*"):  # environments of earlier sources
            shutil.rmtree(old, ignore_errors=True)
        subprocess.run([sys.executable, "-m", "venv", str(env)], check=True)
        pip = [str(env / "bin" / "python"), "-m", "pip", "install", "-q"]
        subprocess.run([*pip, *BASE_PACKAGES], check=True)
        # The lab extension is built already (the test command's editable install built
        # it), and the wheel takes it as it is.
        packages = [str(ROOT) if p == "jupyter-pai" else p for p in pip_line()]
        subprocess.run([*pip, *packages], check=True)
        (env / ".complete").write_text("")
    return env
