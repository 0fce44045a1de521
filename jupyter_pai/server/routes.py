"""Every REST route, written as the OpenAPI file writes it (``jobs/{job_id}``), so a test can
check this table and ``openapi.yaml`` against each other."""

from __future__ import annotations

import re

from jupyter_server.utils import url_path_join

from .handlers.abnormal import AbnormalJobsHandler
from .handlers.base import PAIHandler
from .handlers.check import CheckHandler
from .handlers.convert import ConvertHandler
from .handlers.info import ImagesHandler, InfoHandler, SchemaHandler
from .handlers.job_changes import JobChangesHandler
from .handlers.jobs import JobEventsHandler, JobHandler, JobsHandler
from .handlers.logs import JobLogsHandler
from .handlers.nodes import NodesHandler
from .handlers.notebook_jobs import NotebookJobsHandler
from .handlers.storage import StorageHandler, StoragesHandler
from .handlers.taskports import TaskPortHandler, TaskPortLinkHandler, TaskPortRedirectHandler
from .handlers.utilisation import JobUtilisationHandler
from .handlers.virtual_clusters import VirtualClustersHandler

PREFIX = "pai/api"

ROUTES: list[tuple[str, type[PAIHandler]]] = [
    ("info", InfoHandler),
    ("images", ImagesHandler),
    ("schema", SchemaHandler),
    ("convert", ConvertHandler),
    ("virtual-clusters", VirtualClustersHandler),
    ("jobs", JobsHandler),
    ("job-changes", JobChangesHandler),
    ("jobs/{job_id}", JobHandler),
    ("jobs/{job_id}/logs", JobLogsHandler),
    ("jobs/{job_id}/events", JobEventsHandler),
    ("jobs/{job_id}/utilisation", JobUtilisationHandler),
    ("abnormal-jobs", AbnormalJobsHandler),
    ("nodes", NodesHandler),
    ("check", CheckHandler),
    # The proxy first: the bare port's pattern (trailing / optional) would take ``…/``.
    ("jobs/{job_id}/tasks/{task}/ports/{port}/{path}", TaskPortHandler),
    ("jobs/{job_id}/tasks/{task}/ports/{port}", TaskPortRedirectHandler),
    ("task-ports/{link}/{path}", TaskPortLinkHandler),
    ("notebook-jobs", NotebookJobsHandler),
    ("storage", StoragesHandler),
    ("storage/{name}", StorageHandler),
    ("storage/{name}/{path}", StorageHandler),
]


def to_regex(template: str) -> str:
    """``jobs/{job_id}`` → ``jobs/(?P<id>[^/]+)``; ``{path}`` may span several segments."""

    def group(m: re.Match[str]) -> str:
        name = m.group(1)
        return f"(?P<{name}>.*)" if name == "path" else f"(?P<{name}>[^/]+)"

    return re.sub(r"\{(\w+)\}", group, template)


def handlers() -> list[tuple[str, type[PAIHandler]]]:
    """Patterns relative to the server's base URL (ExtensionApp prefixes it)."""
    return [(url_path_join(PREFIX, to_regex(t)) + "/?", h) for t, h in ROUTES]
