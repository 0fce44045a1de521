"""`prebuilt.ensure` for Kueue, JobSet and HiveD: found where it is looked for, verified,
unpacked once; a missing folder or a damaged binary fails loudly. A stand-in folder, no
cluster."""

from __future__ import annotations

import hashlib
import lzma
from pathlib import Path

import pytest

from tests.cluster import build, prebuilt

COMPONENTS = [prebuilt.KUEUE, prebuilt.JOBSET, prebuilt.HIVED]


def _fake(root: Path, component: prebuilt.Component, *, damage: bool = False) -> Path:
    source = root / component.folder
    (source / "bin").mkdir(parents=True)
    sums = []
    for name in component.binaries:
        content = f"#!/bin/sh\necho {name}\n".encode()
        sums.append(f"{hashlib.sha256(content).hexdigest()}  {name}\n")
        if damage:
            content += b"tampered"
        (source / "bin" / f"{name}.xz").write_bytes(lzma.compress(content))
    (source / "SHA256SUMS.binaries").write_text("".join(sums))
    for part in component.parts:
        (source / part).mkdir(parents=True)
        (source / part / "x.yaml").write_text("kind: X\n")
    return source


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("JUPYTER_PAI_CLUSTER_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.mark.parametrize("component", COMPONENTS, ids=lambda c: c.folder)
def test_unpacks_verified_binaries_once(
    component: prebuilt.Component, tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(component.env, str(_fake(tmp_path, component)))
    target = prebuilt.ensure(component)
    assert target.parent == cache
    assert target.name.startswith(f"{component.folder}-{component.version}_")
    for name in component.binaries:
        binary = target / "bin" / name
        assert binary.read_text() == f"#!/bin/sh\necho {name}\n"
        assert binary.stat().st_mode & 0o111
    for part in component.parts:
        assert (target / part / "x.yaml").is_file()
    stamp = (target / ".complete").stat().st_mtime_ns
    assert prebuilt.ensure(component) == target  # warm: nothing unpacked again
    assert (target / ".complete").stat().st_mtime_ns == stamp


@pytest.mark.parametrize("component", COMPONENTS, ids=lambda c: c.folder)
def test_damaged_binary_is_refused(
    component: prebuilt.Component, tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(component.env, str(_fake(tmp_path, component, damage=True)))
    binary = component.binaries[0]
    with pytest.raises(build.BuildError, match=rf"{binary}\.xz: decompressed SHA-256"):
        prebuilt.ensure(component)
    assert not list(cache.glob(f"{component.folder}-*/.complete"))


@pytest.mark.parametrize("component", COMPONENTS, ids=lambda c: c.folder)
def test_missing_folder_names_where_it_looked(
    component: prebuilt.Component, tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(component.env, str(tmp_path / "nowhere"))
    with pytest.raises(build.BuildError, match=rf"{component.env}=.*nowhere"):
        prebuilt.ensure(component)
    monkeypatch.delenv(component.env)
    expected = Path(prebuilt.__file__).resolve().parents[3] / "shared" / "thirdparty"
    assert component.source() == expected / f"{component.folder}-{component.version}"
    with pytest.raises(build.BuildError, match=r"is not set"):
        monkeypatch.setattr(prebuilt.Component, "source", lambda self: tmp_path / "absent")
        prebuilt.ensure(component)
