"""binder/ does what a Binder (repo2docker) does with it, in a fresh virtual environment:
``pip install -r binder/requirements.txt``, ``binder/postBuild`` from the repository root,
then the session through ``binder/start`` — where the getting-started notebook must run on
the local backend with 4 simulated GPU slots.

Packages come from a wheelhouse kept between runs (``~/.cache/jupyter-pai/wheelhouse``,
``JUPYTER_PAI_WHEELHOUSE``): the steps run offline against it, and only when it lacks
something is it filled from the package index (once, about 2 minutes)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from ..tutorials import EXAMPLES, check_getting_started, execute_command, read

ROOT = Path(__file__).resolve().parents[2]
BINDER = ROOT / "binder"
WHEELHOUSE = Path(
    os.environ.get("JUPYTER_PAI_WHEELHOUSE") or Path.home() / ".cache/jupyter-pai/wheelhouse"
)
# What pip's isolated build of jupyter-pai needs (pyproject.toml's build-system).
BUILD_REQUIREMENTS = [
    "hatchling>=1.21",
    "hatch-jupyter-builder>=0.9",
    "hatch-nodejs-version>=0.3.2",
]


def run(cmd: list[str], env: dict[str, str], cwd: Path, timeout: float = 600) -> str:
    done = subprocess.run(
        cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False
    )
    assert done.returncode == 0, f"{cmd} failed:\n{done.stdout[-3000:]}\n{done.stderr[-5000:]}"
    return done.stdout + done.stderr  # jupyter's extension lists go to stderr


def venv_env(venv: Path, home: Path, offline: bool) -> dict[str, str]:
    """As in a Binder image: the environment's bin first on PATH; nothing of this checkout
    importable except what postBuild installs."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    env.update(
        PATH=f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}",
        VIRTUAL_ENV=str(venv),
        HOME=str(home),
        JUPYTER_CONFIG_DIR=str(home / ".jupyter"),
        JUPYTER_DATA_DIR=str(home / ".local/share/jupyter"),
        JUPYTER_RUNTIME_DIR=str(home / "runtime"),
        PIP_FIND_LINKS=str(WHEELHOUSE),
        PIP_DISABLE_PIP_VERSION_CHECK="1",
        PIP_NO_COMPILE="1",  # no bytecode for ~100 packages up front: Python writes it as used
    )
    if offline:
        env["PIP_NO_INDEX"] = "1"
    return env


def fill_wheelhouse(venv: Path, env: dict[str, str]) -> None:
    """Wheels of everything the steps install (and of pip's build of jupyter-pai)."""
    WHEELHOUSE.mkdir(parents=True, exist_ok=True)
    online = {k: v for k, v in env.items() if k != "PIP_NO_INDEX"}
    pip = [str(venv / "bin/python"), "-m", "pip", "wheel", "-q", "-w", str(WHEELHOUSE)]
    run([*pip, "-r", str(BINDER / "requirements.txt"), *BUILD_REQUIREMENTS], online, ROOT, 1200)
    run([*pip, "jupyterlab>=4.2,<5", str(ROOT)], online, ROOT, 1200)
    for built in WHEELHOUSE.glob("jupyter_pai-*.whl"):
        built.unlink()  # postBuild must build jupyter-pai from the checkout itself


def setup_steps(venv: Path, env: dict[str, str]) -> None:
    run(["pip", "install", "-q", "-r", str(BINDER / "requirements.txt")], env, ROOT)
    run([str(BINDER / "postBuild")], env, ROOT)


def test_binder_environment_runs_the_getting_started_notebook(tmp_path: Path) -> None:
    venv, home = tmp_path / "venv", tmp_path / "home"
    home.mkdir()
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    env = venv_env(venv, home, offline=True)
    try:
        setup_steps(venv, env)
    except AssertionError:
        fill_wheelhouse(venv, env)  # the wheelhouse lacked something: fill it, run again
        setup_steps(venv, env)

    python = str(venv / "bin/python")
    where = run([python, "-c", "import jupyter_pai; print(jupyter_pai.__file__)"], env, tmp_path)
    where = where.strip()
    assert where.startswith(str(venv)), f"jupyter_pai not installed in the environment: {where}"
    extensions = run(["jupyter", "server", "extension", "list"], env, tmp_path)
    assert "jupyter_pai" in extensions and "enabled" in extensions, extensions
    assert "jupyter-pai" in run(["jupyter", "labextension", "list"], env, tmp_path)
    server_config = venv / "etc/jupyter/jupyter_server_config.d/jupyter-pai-binder.json"
    default_url = json.loads(server_config.read_text())["ServerApp"]["default_url"]
    opened = default_url.removeprefix("/lab/tree/")
    assert (ROOT / opened).is_file(), f"JupyterLab would open {opened}, which does not exist"

    # The session, as Binder starts it: through binder/start, from the repository's copy.
    work = tmp_path / "repo"
    shutil.copytree(EXAMPLES, work / "examples")
    notebook = work / opened
    start_env = {k: v for k, v in env.items() if not k.startswith("JUPYTER_PAI_")}
    run([str(BINDER / "start"), *execute_command(python, notebook)], start_env, work, 400)
    check_getting_started(read(notebook))
    state = home / ".local/share/jupyter/pai"
    assert any((state / "jobs").iterdir()), "jobs did not use the state directory start set"
