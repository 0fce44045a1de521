"""The golden-file helper every golden test uses: only ``UPDATE_GOLDEN=1`` rewrites."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.golden import check_golden


@pytest.mark.parametrize("setting", [None, "", "0", "false", "no"])
def test_a_changed_output_fails_unless_updating(
    setting: str | None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if setting is None:
        monkeypatch.delenv("UPDATE_GOLDEN", raising=False)
    else:
        monkeypatch.setenv("UPDATE_GOLDEN", setting)
    path = tmp_path / "out.txt"
    path.write_text("old\n")
    with pytest.raises(AssertionError):
        check_golden(path, "new\n")
    assert path.read_text() == "old\n"


def test_update_golden_rewrites_and_a_missing_file_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "sub" / "out.json"
    monkeypatch.delenv("UPDATE_GOLDEN", raising=False)
    with pytest.raises(AssertionError, match="UPDATE_GOLDEN=1"):
        check_golden(path, "{}\n")
    monkeypatch.setenv("UPDATE_GOLDEN", "1")
    check_golden(path, '{"a": 1}\n', json.loads)
    assert path.read_text() == '{"a": 1}\n'
    monkeypatch.delenv("UPDATE_GOLDEN")
    check_golden(path, '{ "a": 1 }\n', json.loads)  # the same data, written otherwise
