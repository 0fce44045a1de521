"""Every spec in tests/unit/specs_warn/ is accepted with a warning at the expected path:
markers that resolve to nothing stay in the command, as OpenPAI leaves them; a completion
count of 0 is OpenPAI's default."""

from __future__ import annotations

import pytest

from jupyter_pai.spec import parse_job, task_commands
from tests.spec_corpus import SPECS_WARN, bad_spec_cases, golden, normalized

CASES = bad_spec_cases(SPECS_WARN)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_spec_is_accepted_with_a_warning_at_its_path(case) -> None:  # type: ignore[no-untyped-def]
    parsed = parse_job(case.text)
    at_path = [w.message for w in parsed.warnings if w.path == case.expected_path]
    assert at_path, f"{case.name}: got {[str(w) for w in parsed.warnings]}"
    assert case.expected_message and any(case.expected_message in m for m in at_path), at_path
    if any("left as" in m for m in at_path):
        # The marker is still in the rendered commands, as OpenPAI writes it back.
        job = parsed.job
        lines = [line for role in job.role_names for line in task_commands(job, role)]
        assert any("<% $" in line for line in lines), lines


def test_warning_messages_golden() -> None:
    found = {case.name: [str(w) for w in parse_job(case.text).warnings] for case in CASES}
    assert normalized(found) == golden("specs_warn_warnings.json", found)
