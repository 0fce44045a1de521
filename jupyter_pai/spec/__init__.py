"""Job specification: OpenPAI protocol v2 and the short form, validated by one model."""

from .parse import ParsedJob, load_document, parse_job
from .protocol import JobProtocol, TaskRole
from .render import public_spec, redact, secret_values, task_commands
from .schema import job_schema

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
