"""`build.ensure_volcano`: found where it is looked for, verified, unpacked once; a
missing folder or a damaged binary fails loudly. A stand-in folder, no cluster."""

from __future__ import annotations

import hashlib
import lzma
from pathlib import Path

import pytest

from tests.cluster import build


def _fake_volcano(root: Path, *, damage: str | None = None) -> Path:
    source = root / "volcano"
    (source / "bin").mkdir(parents=True)
    sums = []
    for name in build.VOLCANO_BINARIES:
        content = f"#!/bin/sh\necho {name}\n".encode()
        digest = hashlib.sha256(content).hexdigest()
        if name == damage:
            content += b"tampered"
        (source / "bin" / f"{name}.xz").write_bytes(lzma.compress(content))
        sums.append(f"{digest}  {name}\n")
    (source / "SHA256SUMS.binaries").write_text("".join(sums))
    for part in build.VOLCANO_CHART_PARTS:
        (source / "chart" / part).mkdir(parents=True)
        (source / "chart" / part / "x.yaml").write_text("kind: X\n")
    return source


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("JUPYTER_PAI_CLUSTER_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_unpacks_verified_binaries_once(
    tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(build.VOLCANO_DIR_ENV, str(_fake_volcano(tmp_path)))
    target = build.ensure_volcano()
    assert target.parent == cache and target.name.startswith("volcano-v1.15.1_")
    for name in build.VOLCANO_BINARIES:
        binary = target / "bin" / name
        assert binary.read_text() == f"#!/bin/sh\necho {name}\n"
        assert binary.stat().st_mode & 0o111
    assert (target / "chart" / "charts" / "jobflow" / "crd" / "bases" / "x.yaml").is_file()
    stamp = (target / ".complete").stat().st_mtime_ns
    assert build.ensure_volcano() == target  # warm: nothing unpacked again
    assert (target / ".complete").stat().st_mtime_ns == stamp


def test_damaged_binary_is_refused(
    tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(build.VOLCANO_DIR_ENV, str(_fake_volcano(tmp_path, damage="vc-scheduler")))
    with pytest.raises(build.BuildError, match=r"vc-scheduler\.xz: decompressed SHA-256"):
        build.ensure_volcano()
    assert not list(cache.glob("volcano-*/.complete"))


def test_missing_folder_names_where_it_looked(
    tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(build.VOLCANO_DIR_ENV, str(tmp_path / "nowhere"))
    with pytest.raises(build.BuildError, match=r"JUPYTER_PAI_VOLCANO_DIR=.*nowhere"):
        build.ensure_volcano()
    monkeypatch.delenv(build.VOLCANO_DIR_ENV)
    expected = Path(build.__file__).resolve().parents[3] / "shared" / "thirdparty"
    assert build.volcano_source() == expected / "volcano-v1.15.1"
