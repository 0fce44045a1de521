"""Shared test data for job specifications: the malformed-spec corpus, the examples, and
golden-file comparison.

``bad_specs()`` is the corpus other tests reuse (the REST tests POST each one and expect a
400 naming ``expected_path``, and no job created). Each corpus file under
``tests/unit/specs_bad/`` says what it expects:

* YAML files: a first line ``# expect-path: PATH`` and optionally a second line
  ``# expect-message: TEXT`` (a fragment of the message at that path);
* JSON files (which cannot hold comments): a sidecar ``NAME.json.expect`` whose first line
  is the path and whose optional second line is the message fragment.

``<root>`` stands for the empty path: the document as a whole (invalid YAML, not a mapping,
empty).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.golden import golden_text

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
SPECS_BAD = HERE / "unit" / "specs_bad"
#: Valid specs that must be accepted with a warning at ``expected_path`` (same headers).
SPECS_WARN = HERE / "unit" / "specs_warn"
GOLDEN = HERE / "unit" / "golden"
EXAMPLES = REPO / "examples"
ROOT = "<root>"


@dataclass(frozen=True)
class BadSpec:
    name: str
    text: str
    expected_path: str
    expected_message: str | None
    content_type: str

    def as_tuple(self) -> tuple[str, str, str]:
        return (self.name, self.text, self.expected_path)


def bad_spec_cases(folder: Path = SPECS_BAD) -> list[BadSpec]:
    """Every corpus file with its expectations, sorted by name."""
    cases: list[BadSpec] = []
    for path in sorted(folder.iterdir()):
        if path.suffix not in (".yaml", ".yml", ".json"):
            continue
        text = path.read_text(encoding="utf-8")
        if path.suffix == ".json":
            lines = (path.with_name(path.name + ".expect")).read_text(encoding="utf-8")
            expect = lines.splitlines()
            where, message = expect[0].strip(), (expect[1].strip() if len(expect) > 1 else None)
            content_type = "application/json"
        else:
            head = text.splitlines()[:2]
            if not head or not head[0].startswith("# expect-path:"):
                raise ValueError(f"{path.name}: the first line must be '# expect-path: PATH'")
            where = head[0].split(":", 1)[1].strip()
            message = None
            if len(head) > 1 and head[1].startswith("# expect-message:"):
                message = head[1].split(":", 1)[1].strip()
            content_type = "text/yaml"
        cases.append(
            BadSpec(
                name=path.name,
                text=text,
                expected_path="" if where == ROOT else where,
                expected_message=message,
                content_type=content_type,
            )
        )
    return cases


def bad_specs() -> list[tuple[str, str, str]]:
    """``(name, text, expected_path)`` for every malformed spec; ``expected_path`` is ``""``
    where the error is about the document as a whole."""
    return [case.as_tuple() for case in bad_spec_cases()]


def example_files() -> list[Path]:
    """The job examples shipped in ``examples/``."""
    return sorted(p for p in EXAMPLES.iterdir() if p.suffix in (".yaml", ".yml", ".json"))


def normalized(data: Any) -> Any:
    """``data`` as it reads back from JSON (tuples become lists, keys become text)."""
    return json.loads(json.dumps(data))


def golden(name: str, data: Any) -> Any:
    """The content of ``tests/unit/golden/NAME`` to compare ``data`` with; with
    ``UPDATE_GOLDEN=1`` in the environment the file is (re)written from ``data`` first.

    Use as ``assert normalized(data) == golden(NAME, data)`` so pytest shows the diff."""
    text = json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    return json.loads(golden_text(GOLDEN / name, text))
