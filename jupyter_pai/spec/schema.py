"""JSON Schema of the job protocol, for editors and the side panel's YAML validation."""

from __future__ import annotations

from typing import Any

from .protocol import JobProtocol


def job_schema() -> dict[str, Any]:
    schema = JobProtocol.model_json_schema(by_alias=True, mode="validation")
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "OpenPAI job protocol v2 (jupyter-pai)"
    return schema
