"""Job specification: OpenPAI protocol v2 and the short form, validated by one model.

Names are imported on first use, so a process that needs only the protocol model (a local
job's supervisor) does not pay for the YAML parser, the short-form model and the schema."""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .document import load_document
    from .parse import ParsedJob, parse_job
    from .protocol import JobProtocol, TaskRole
    from .render import public_spec, redact, secret_values, task_commands
    from .schema import job_schema

_WHERE = {
    "ParsedJob": "parse",
    "load_document": "document",
    "parse_job": "parse",
    "JobProtocol": "protocol",
    "TaskRole": "protocol",
    "public_spec": "render",
    "redact": "render",
    "secret_values": "render",
    "task_commands": "render",
    "job_schema": "schema",
}

__all__ = [
    "JobProtocol",
    "ParsedJob",
    "TaskRole",
    "job_schema",
    "load_document",
    "parse_job",
    "public_spec",
    "redact",
    "secret_values",
    "task_commands",
]


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(import_module(f".{_WHERE[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
