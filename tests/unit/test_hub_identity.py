"""Under JupyterHub the signed-in user ($JUPYTERHUB_USER) owns every job, kernel and
storage helper: neither $JUPYTER_PAI_USER nor ``Backend.user`` may name someone else."""

from __future__ import annotations

import getpass
from pathlib import Path

import pytest
from traitlets.config import Config

from jupyter_pai.backends.kubernetes import connect, identity
from jupyter_pai.backends.local import LocalBackend


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ("JUPYTERHUB_USER", "JUPYTER_PAI_USER"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("JUPYTER_PAI_STATE_DIR", str(tmp_path / "state"))


def make(config: Config | None = None) -> LocalBackend:
    return LocalBackend(config=config or Config())


def test_without_a_hub_the_old_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    assert make().user == getpass.getuser()
    monkeypatch.setenv("JUPYTER_PAI_USER", "alice")
    assert make().user == "alice"


def test_the_hub_user_is_the_user(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JUPYTERHUB_USER", "carol")
    assert make().user == "carol"
    monkeypatch.setenv("JUPYTER_PAI_USER", "carol")  # the same name: fine
    assert make().user == "carol"
    config = Config()
    config.Backend.user = "carol"
    assert make(config).user == "carol"


def test_another_name_is_refused_at_start(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JUPYTERHUB_USER", "carol")
    monkeypatch.setenv("JUPYTER_PAI_USER", "dave")
    with pytest.raises(ValueError, match=r"\$JUPYTER_PAI_USER is 'dave'.*'carol'"):
        make()
    monkeypatch.delenv("JUPYTER_PAI_USER")
    config = Config()
    config.Backend.user = "dave"
    with pytest.raises(ValueError, match=r"Backend.user is 'dave'.*'carol'"):
        make(config)


def test_a_namespace_not_the_servers_own_is_no_ones(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    pod_ns = tmp_path / "namespace"
    pod_ns.write_text("carol\n")
    monkeypatch.setattr(connect, "SA_NAMESPACE", pod_ns)
    assert identity.foreign_namespace("team") is None  # no hub: annotations as before
    monkeypatch.setenv("JUPYTERHUB_USER", "carol")
    assert identity.foreign_namespace("carol") is None
    reason = identity.foreign_namespace("team")
    assert reason is not None and "team" in reason and "carol" in reason
    monkeypatch.setattr(connect, "SA_NAMESPACE", tmp_path / "absent")
    assert identity.foreign_namespace("team") is None  # not in a pod: nothing to compare
