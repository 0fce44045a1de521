"""What a backend does with a validated job: the command lines of a task with markers
replaced, and the job as shown back to users (secrets hidden)."""

from __future__ import annotations

from typing import Any

from .protocol import JobProtocol
from .templating import Reference, as_text, lookup, render

HIDDEN = "******"
#: Secret values shorter than this are hidden where they are declared but not searched for
#: inside other text (a secret "1" would otherwise blank every digit of a spec).
MIN_SEARCHED_SECRET = 4


def task_commands(job: JobProtocol, role: str, *, secrets: bool = True) -> list[str]:
    """preCommands of the default deployment, the role's commands, then postCommands.

    ``secrets=False`` leaves ``<% $secrets.x %>`` in place (for manifests a backend stores
    where users can read them; the values then come from a Secret at run time)."""
    role_spec = job.task_roles[role]
    lines: list[str] = []
    deployment = job.deployment()
    dep_role = deployment.task_roles.get(role) if deployment else None
    if dep_role:
        lines += dep_role.pre_commands
    lines += role_spec.commands
    if dep_role:
        lines += dep_role.post_commands

    def resolve(ref: Reference) -> str:
        if ref.scope == "parameters":
            return as_text(lookup(job.parameters, ref.key))
        if ref.scope == "secrets":
            if not secrets:
                return f"<% $secrets.{ref.key} %>"
            return as_text(lookup(job.secrets, ref.key))
        pre = job.prerequisite(getattr(role_spec, ref.scope, None) or "")
        if pre is None:
            return ""
        if ref.key == "uri":
            uri = pre.uri
            return uri if isinstance(uri, str) else " ".join(uri or [])
        return as_text(getattr(pre, ref.key, ""))

    return [render(line, resolve) for line in lines]


def secret_values(job: JobProtocol) -> list[str]:
    """Every secret as text, longest first: what must never appear in responses or logs."""
    found: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            for v in value.values():
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)
        elif value is not None and as_text(value):
            found.append(as_text(value))

    walk(job.secrets)
    for pre in job.prerequisites:
        if pre.auth and pre.auth.password:
            found.append(pre.auth.password)
    return sorted(set(found), key=len, reverse=True)


def public_spec(job: JobProtocol) -> dict[str, Any]:
    """The job as users may see it: every field, secrets' values replaced by ``******``.

    Declared secrets and registry passwords are hidden outright; any other text that
    contains a secret's value (a parameter, a plugin's settings) has it replaced."""
    doc = job.model_dump(mode="json", by_alias=True, exclude_none=True)
    if "secrets" in doc:
        doc["secrets"] = {key: HIDDEN for key in doc["secrets"]}
    for pre in doc.get("prerequisites", []):
        auth = pre.get("auth")
        if auth and auth.get("password"):
            auth["password"] = HIDDEN
    searched = [s for s in secret_values(job) if len(s) >= MIN_SEARCHED_SECRET]
    if not searched:
        return doc
    redacted: dict[str, Any] = _redact_tree(doc, searched)
    return redacted


def _redact_tree(value: Any, secrets: list[str]) -> Any:
    if isinstance(value, str):
        return redact(value, secrets)
    if isinstance(value, dict):
        return {redact(k, secrets): _redact_tree(v, secrets) for k, v in value.items()}
    if isinstance(value, list):
        return [_redact_tree(v, secrets) for v in value]
    return value


def redact(text: str, secrets: list[str]) -> str:
    """``text`` with every value of ``secrets`` (longest first, as :func:`secret_values`
    returns them) replaced by ``******``."""
    for value in secrets:
        if value:
            text = text.replace(value, HIDDEN)
    return text
