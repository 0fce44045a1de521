"""The exported JSON Schema: valid, committed in sync, and accepting every example."""

from __future__ import annotations

import json

import jsonschema
import pytest
import yaml

from jupyter_pai.spec import job_schema
from jupyter_pai.spec.schema import SCHEMA_FILE, schema_text, write_schema
from tests.golden import update_golden
from tests.spec_corpus import example_files

VALIDATOR = jsonschema.Draft202012Validator(job_schema())


def test_schema_is_valid_draft_2020_12() -> None:
    jsonschema.Draft202012Validator.check_schema(job_schema())


def test_committed_schema_is_in_sync() -> None:
    """jupyter_pai/spec/job-schema.json is what the UI loads; regenerate it with
    ``UPDATE_GOLDEN=1`` or ``python -m jupyter_pai.spec.schema``."""
    if update_golden():
        write_schema()
    assert SCHEMA_FILE.exists(), "run with UPDATE_GOLDEN=1 to write job-schema.json"
    assert json.loads(SCHEMA_FILE.read_text(encoding="utf-8")) == json.loads(schema_text())
    assert SCHEMA_FILE.read_text(encoding="utf-8") == schema_text()


@pytest.mark.parametrize("path", example_files(), ids=lambda p: p.name)
def test_schema_accepts_every_example(path) -> None:  # type: ignore[no-untyped-def]
    doc = yaml.safe_load(path.read_text())
    errors = [e.message for e in VALIDATOR.iter_errors(doc)]
    assert errors == []


def test_schema_accepts_openpai_leniencies() -> None:
    doc = {
        "protocolVersion": "2",
        "name": "x",
        "type": "job",
        "version": 1.0,
        "someFutureField": {"a": 1},
        "taskRoles": {"w": {"commands": "echo one line"}},
    }
    assert VALIDATOR.is_valid(doc)
    short = {
        "name": "s",
        "image": "i",
        "commands": ["a"],
        "gpu": 1,
        "storages": ["d", {"name": "e"}],
    }
    assert VALIDATOR.is_valid(short)


BASE = {
    "protocolVersion": 2,
    "name": "x",
    "type": "job",
    "taskRoles": {"w": {"commands": ["echo"], "resourcePerInstance": {"gpu": 1}}},
}


def _with(path: str, value: object) -> dict[str, object]:
    doc = json.loads(json.dumps(BASE))
    *parents, last = path.split(".")
    node = doc
    for part in parents:
        node = node.setdefault(part, {})
    node[last] = value
    return doc


@pytest.mark.parametrize(
    "doc",
    [
        _with("protocolVersion", 1),
        _with("type", "service"),
        _with("name", "has space"),
        _with("taskRoles.w.resourcePerInstance.gpu", -1),
        _with("taskRoles.w.instances", 0),
        _with("taskRoles.w.completion", {"minFailedInstances": -2}),
        _with("taskRoles.w.resourcePerInstance.ports", {"bad-label": 1}),
        _with("taskRoles.bad-role", {"commands": ["x"]}),
        _with("taskRoles.w.commands", []),
        _with("extras.hivedScheduler", {"jobPriorityClass": "urgent"}),
        _with("jobRetryCount", -1),
        {k: v for k, v in BASE.items() if k != "taskRoles"},
        {"name": "short", "image": "i", "gpus": -1, "command": "x"},
        {"name": "short", "image": "i"},
        {"name": "mixed", "command": "x", "taskRoles": {}},
    ],
)
def test_schema_rejects_shape_errors(doc: dict[str, object]) -> None:
    assert not VALIDATOR.is_valid(doc)
