"""JSON Schema of a job specification (protocol v2, the short form or OpenPAI v1 JSON), for editors and the
side panel's YAML validation.

The committed copy lives next to this module as ``job-schema.json`` (the labextension loads
it); ``python -m jupyter_pai.spec.schema`` rewrites it and a unit test keeps it in sync.
The schema checks shapes and single-field rules; what needs several fields at once (a
``dockerImage`` naming a prerequisite, parameters used in commands) only
:func:`jupyter_pai.spec.parse_job` checks.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter

from .protocol import JobProtocol
from .shortform import SHORT_ONLY_KEYS, ShortForm
from .v1 import V1_JSON_SCHEMA

V1_DEF = "OpenPAIv1Job"

SCHEMA_ID = "https://jupyter-pai.readthedocs.io/schema/job-schema.json"
SCHEMA_FILE = Path(__file__).with_name("job-schema.json")


def job_schema() -> dict[str, Any]:
    """``anyOf`` the protocol-v2 document (``$defs/JobProtocol``), the short form
    (``$defs/ShortForm``) and OpenPAI's v1 JSON (``$defs/OpenPAIv1Job``)."""
    adapter: TypeAdapter[JobProtocol | ShortForm] = TypeAdapter(JobProtocol | ShortForm)
    schema = adapter.json_schema(by_alias=True, mode="validation")
    defs = schema["$defs"]
    for definition in defs.values():
        _key_patterns(definition)
    protocol = defs["JobProtocol"]
    protocol["description"] = "A job in the OpenPAI job protocol v2."
    short = defs["ShortForm"]
    short["description"] = (
        "The short form: one task role of `instances` copies of `command` in `image`."
    )
    # Where both `command` and `commands` (or `gpus` and `gpu`) are accepted, say so.
    short["properties"]["commands"] = short["properties"]["command"]
    short["properties"]["gpu"] = short["properties"]["gpus"]
    storages = short["properties"]["storages"]
    storages["items"] = {"anyOf": [{"type": "string", "minLength": 1}, storages["items"]]}
    short["required"] = [k for k in short.get("required", []) if k != "command"]
    short["allOf"] = [
        {"anyOf": [{"required": ["command"]}, {"required": ["commands"]}]},
        {"not": {"anyOf": [{"required": ["protocolVersion"]}, {"required": ["taskRoles"]}]}},
        {"anyOf": [{"required": [key]} for key in SHORT_ONLY_KEYS]},
    ]
    defs[V1_DEF] = V1_JSON_SCHEMA
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        "title": "jupyter-pai job (OpenPAI job protocol v2, the short form, or OpenPAI v1 JSON)",
        "anyOf": [*schema["anyOf"], {"$ref": f"#/$defs/{V1_DEF}"}],
        "$defs": defs,
    }


def _key_patterns(node: Any) -> None:
    """pydantic writes ``dict[Pattern, V]`` as ``patternProperties``, which lets any other
    key through; make the pattern bind every key (role names, port labels)."""
    if isinstance(node, dict):
        patterns = node.get("patternProperties")
        if isinstance(patterns, dict) and len(patterns) == 1 and "additionalProperties" not in node:
            ((pattern, value),) = patterns.items()
            del node["patternProperties"]
            node["propertyNames"] = {"pattern": pattern}
            node["additionalProperties"] = value
        for value in node.values():
            _key_patterns(value)
    elif isinstance(node, list):
        for value in node:
            _key_patterns(value)


def schema_text() -> str:
    return json.dumps(job_schema(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def write_schema(path: Path = SCHEMA_FILE) -> Path:
    path.write_text(schema_text(), encoding="utf-8")
    return path


if __name__ == "__main__":  # pragma: no cover
    print(write_schema(Path(sys.argv[1]) if len(sys.argv) > 1 else SCHEMA_FILE))
