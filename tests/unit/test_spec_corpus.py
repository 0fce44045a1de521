"""Every malformed spec in tests/unit/specs_bad/ is rejected, naming the expected path."""

from __future__ import annotations

import pytest

from jupyter_pai.errors import SpecError
from jupyter_pai.spec import parse_job
from tests.spec_corpus import bad_spec_cases, bad_specs, golden, normalized

CASES = bad_spec_cases()


def test_corpus_is_large_enough() -> None:
    assert len(CASES) >= 40
    assert len({c.name for c in CASES}) == len(CASES)
    assert all(len(t) == 3 for t in bad_specs())


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_bad_spec_is_rejected_at_its_path(case) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(SpecError) as info:
        parse_job(case.text)
    err = info.value
    assert err.status == 400
    assert err.errors, "a SpecError must carry at least one FieldError"
    paths = [e.path for e in err.errors]
    assert case.expected_path in paths, f"{case.name}: got {[str(e) for e in err.errors]}"
    if case.expected_message:
        at_path = [e.message for e in err.errors if e.path == case.expected_path]
        assert any(case.expected_message in m for m in at_path), at_path
    body = err.to_json()
    assert isinstance(body["errors"], list)
    assert body["errors"][paths.index(case.expected_path)]["path"] == case.expected_path
    assert str(err.message).startswith("invalid job specification")


def test_bytes_input_gives_the_same_errors() -> None:
    for case in CASES:
        with pytest.raises(SpecError) as a:
            parse_job(case.text)
        with pytest.raises(SpecError) as b:
            parse_job(case.text.encode("utf-8"))
        assert a.value.errors == b.value.errors, case.name


def test_corpus_messages_golden() -> None:
    """Every message the corpus produces, pinned: a change in wording shows up in review."""
    found: dict[str, list[str]] = {}
    for case in CASES:
        try:
            parse_job(case.text)
        except SpecError as exc:
            found[case.name] = [str(e) for e in exc.errors]
    assert normalized(found) == golden("specs_bad_errors.json", found)
