"""Harbor through its API v2.0 (``/api/v2.0``, the published swagger description): projects,
their repositories, and each repository's artifacts with tags, push times, sizes, the image
config's labels and the vulnerability scan's severity. A robot account signs in with basic
auth."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

from .auth import RegistryError, Response, Transport
from .models import ImageTag
from .oci import gpu_facts, next_link, parse_time
from .settings import RegistrySettings

API = "/api/v2.0"
#: the scan report types Harbor may key ``scan_overview`` by (newest first)
REPORT_TYPES = (
    "application/vnd.security.vulnerability.report; version=1.1",
    "application/vnd.scanner.adapter.vuln.report.harbor+json; version=1.0",
)
#: pages followed at most per listing (page_size each)
MAX_PAGES = 100


def repository_path(repository: str) -> str:
    """``team/cv/pytorch`` → ``team/repositories/cv%252Fpytorch``: Harbor wants the name
    within the project URL-encoded twice when it holds a slash."""
    project, _, name = repository.partition("/")
    return f"{quote(project, safe='')}/repositories/{quote(quote(name, safe=''), safe='')}"


def _json(response: Response, what: str) -> Any:
    try:
        return json.loads(response.body)
    except ValueError:
        raise RegistryError(f"{what} is not JSON") from None


class HarborClient:
    def __init__(
        self, settings: RegistrySettings, transport: Transport, *, page_size: int = 100
    ) -> None:
        self.settings, self.transport = settings, transport
        self.page_size = max(1, min(page_size, 100))  # Harbor's page_size maximum

    async def _pages(
        self, path: str, limit: int, extra: dict[str, str] | None = None
    ) -> tuple[list[Any], bool]:
        """Items of a paged list (``page``/``page_size``, following ``Link`` or, without
        one, ``X-Total-Count``), up to ``limit``; and whether more were left out."""
        items: list[Any] = []
        sep = "&" if "?" in path else "?"
        url: str | None = f"{API}{path}{sep}page=1&page_size={self.page_size}"
        page = 1
        while url is not None and page <= MAX_PAGES:
            response = await self.transport.get(url, extra=extra)
            found = _json(response, f"{self.settings.url}{API}{path.split('?')[0]}")
            if not isinstance(found, list):
                raise RegistryError(f"{self.settings.url}{API}{path.split('?')[0]} is not a list")
            items.extend(found)
            total = response.headers.get("x-total-count", "")
            more = next_link(response)
            if more is None and total.isdigit() and int(total) > page * self.page_size and found:
                more = f"{API}{path}{sep}page={page + 1}&page_size={self.page_size}"
            if len(items) >= limit:
                return items[:limit], len(items) > limit or more is not None
            url, page = more, page + 1
        return items, url is not None

    async def projects(self) -> list[str]:
        if self.settings.projects:
            return list(self.settings.projects)
        found, _ = await self._pages("/projects", MAX_PAGES * self.page_size)
        return [str(p["name"]) for p in found if isinstance(p, dict) and p.get("name")]

    async def repositories(self, limit: int) -> tuple[list[str], bool]:
        names: list[str] = []
        truncated = False
        for project in await self.projects():
            left = limit - len(names)
            if left <= 0:
                return names, True
            found, more = await self._pages(
                f"/projects/{quote(project, safe='')}/repositories", left
            )
            names.extend(str(r["name"]) for r in found if isinstance(r, dict) and r.get("name"))
            truncated = truncated or more
        return names, truncated

    async def artifacts(self, repository: str, max_tags: int) -> tuple[list[ImageTag], bool]:
        """The newest ``max_tags`` tags of ``repository``, each described from its artifact."""
        query = "with_tag=true&with_scan_overview=true&with_label=false&sort=-push_time"
        found, truncated = await self._pages(
            f"/projects/{repository_path(repository)}/artifacts?{query}",
            max_tags,
            extra={"X-Accept-Vulnerabilities": ", ".join(REPORT_TYPES)},
        )
        tags: list[ImageTag] = []
        for artifact in found:
            if isinstance(artifact, dict):
                tags.extend(self._tags_of(repository, artifact))
        return tags[:max_tags], truncated or len(tags) > max_tags

    async def tags(self, repository: str) -> list[str]:
        found, _ = await self.artifacts(repository, MAX_PAGES * self.page_size)
        return [t.name for t in found]

    def _tags_of(self, repository: str, artifact: dict[str, Any]) -> list[ImageTag]:
        extra = artifact.get("extra_attrs") or {}
        config = extra.get("config") or {} if isinstance(extra, dict) else {}
        labels = {str(k): str(v) for k, v in (config.get("Labels") or {}).items() if v is not None}
        labels.update(
            {
                str(k): str(v)
                for k, v in (artifact.get("annotations") or {}).items()
                if v is not None
            }
        )
        env = dict(
            e.split("=", 1) for e in config.get("Env") or [] if isinstance(e, str) and "=" in e
        )
        cuda, framework = gpu_facts(labels, env)
        severity, total = _scan(artifact.get("scan_overview"))
        created = parse_time(extra.get("created") if isinstance(extra, dict) else None)
        size = artifact.get("size")
        tags = []
        for tag in artifact.get("tags") or []:
            if not isinstance(tag, dict) or not tag.get("name"):
                continue
            tags.append(
                ImageTag(
                    name=str(tag["name"]),
                    uri=f"{self.settings.host}/{repository}:{tag['name']}",
                    digest=artifact.get("digest")
                    if isinstance(artifact.get("digest"), str)
                    else None,
                    created=created
                    or parse_time(tag.get("push_time"))
                    or parse_time(artifact.get("push_time")),
                    size=size if isinstance(size, int) else None,
                    labels=labels,
                    cuda=cuda,
                    framework=framework,
                    scan_severity=severity,
                    vulnerabilities=total,
                )
            )
        return tags


def _scan(overview: Any) -> tuple[str | None, int | None]:
    """(severity, vulnerabilities) of the first scan report in ``scan_overview``."""
    if not isinstance(overview, dict) or not overview:
        return None, None
    report = next(
        (overview[k] for k in REPORT_TYPES if k in overview), next(iter(overview.values()))
    )
    if not isinstance(report, dict):
        return None, None
    severity = report.get("severity")
    summary = report.get("summary") or {}
    total = summary.get("total") if isinstance(summary, dict) else None
    return (
        str(severity) if isinstance(severity, str) and severity else None,
        total if isinstance(total, int) else None,
    )
