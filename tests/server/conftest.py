"""Fixtures for the REST tests: a real Jupyter server (pytest-jupyter) with the jupyter_pai
extension on a fresh local-backend state directory with 4 simulated GPU slots.

Every process a test starts (supervisors, tasks, extra servers) carries the test's own
``JUPYTER_PAI_STATE_DIR`` in its environment; :func:`reap_processes` kills exactly those
after the test, so a failing test never leaves sleepers behind.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

# pytest-jupyter's fixtures on the test's loop; imported here, they stay scoped to tests/server.
from tests.jupyter_fixtures import *  # noqa: F403

from .pai import PAIClient

REPO = Path(__file__).resolve().parents[2]
GPU_SLOTS = 4


@pytest.fixture
def pai_state_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    state = tmp_path / "pai-state"
    monkeypatch.setenv("JUPYTER_PAI_STATE_DIR", str(state))
    monkeypatch.setenv("JUPYTER_PAI_LOCAL_GPUS", str(GPU_SLOTS))
    # Supervisors and tasks are separate Python processes: let them import this checkout
    # whether or not the package is installed.
    path = os.environ.get("PYTHONPATH", "")
    if str(REPO) not in path.split(os.pathsep):
        monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in (str(REPO), path) if p))
    for name in ("JUPYTER_PAI_BACKEND", "JUPYTER_PAI_USER"):
        monkeypatch.delenv(name, raising=False)
    return state


@pytest.fixture
def storage_root(tmp_path: Path) -> Path:
    root = tmp_path / "storage-work"
    root.mkdir()
    return root


@pytest.fixture
def pai_extra_config() -> dict[str, Any]:
    """Override in a test module to add traitlets config (merged per section)."""
    return {}


@pytest.fixture
def jp_server_config(
    pai_state_dir: Path, storage_root: Path, pai_extra_config: dict[str, Any]
) -> dict[str, Any]:
    config: dict[str, Any] = {
        "ServerApp": {"jpserver_extensions": {"jupyter_pai": True}, "allow_root": True},
        "LocalBackend": {
            "stop_grace_seconds": 2,
            "storages_config": {"work": {"path": str(storage_root), "mountPath": "/mnt/work"}},
        },
    }
    for section, values in pai_extra_config.items():
        config.setdefault(section, {}).update(values)
    return config


@pytest.fixture
def pai(
    jp_fetch: Any, jp_root_dir: Path, pai_state_dir: Path, http_server_client: Any
) -> PAIClient:
    return PAIClient(jp_fetch, Path(jp_root_dir), pai_state_dir, http_server_client)


@pytest.fixture(autouse=True)
def reap_processes(tmp_path: Path) -> Iterator[None]:
    """After the test, SIGKILL every process carrying this test's state directory."""
    yield
    marker = f"JUPYTER_PAI_STATE_DIR={tmp_path / 'pai-state'}".encode()
    kill_marked(marker)


def marked_pids(marker: bytes) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environ = (entry / "environ").read_bytes()
            if marker in environ.split(b"\0") and not _servers_own(entry):
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def _servers_own(entry: Path) -> bool:
    """A process of the server under test itself, not of a job: the request parser's worker
    (and multiprocessing's resource tracker), started by this process, live on across tests
    and merely inherited the test's environment."""
    stat = (entry / "stat").read_text()
    parent = int(stat[stat.rindex(")") + 2 :].split()[1])
    return parent == os.getpid() and b"multiprocessing" in (entry / "cmdline").read_bytes()


def kill_marked(marker: bytes, rounds: int = 20) -> None:
    for _ in range(rounds):
        pids = marked_pids(marker)
        if not pids:
            return
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        time.sleep(0.05)
    print(
        f"reap_processes: still alive after {rounds} rounds: {marked_pids(marker)}", file=sys.stderr
    )
