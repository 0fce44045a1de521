"""What a backend does with a validated job: the command lines of a task with markers
replaced, and the job as shown back to users (secrets hidden)."""

from __future__ import annotations

from typing import Any

from .hidden import HIDDEN
from .protocol import JobProtocol
from .templating import MISSING, PREREQUISITE_SCOPES, Reference, as_text, lookup, render, resolve

#: Secret values shorter than this are hidden where they are declared but not searched for
#: inside other text (a secret "1" would otherwise blank every digit of a spec).
MIN_SEARCHED_SECRET = 4


def role_context(job: JobProtocol, role: str, *, secrets: bool = True) -> dict[str, Any]:
    """What a task role's markers may read: ``$parameters``, ``$secrets`` (unless
    ``secrets=False``) and the prerequisites its ``script`` / ``data`` / ``output`` name,
    each as written (any field: ``<% $script.version %>``)."""
    role_spec = job.task_roles[role]
    context: dict[str, Any] = {"$parameters": job.parameters}
    if secrets:
        context["$secrets"] = job.secrets
    for scope in PREREQUISITE_SCOPES:
        name = getattr(role_spec, scope)
        pre = job.prerequisite(name, scope) if name else None
        context[f"${scope}"] = pre.as_written() if pre is not None else None
    return context


def _value_of(context: dict[str, Any], job: JobProtocol, secrets: bool) -> Any:
    def value_of(ref: Reference) -> Any:
        if not secrets and ref.scope == "secrets":
            # Kept for the backend to fill in at run time (a Kubernetes Secret); a secret
            # that is not declared resolves to nothing either way.
            try:
                lookup(job.secrets, ref.key)
            except KeyError:
                return MISSING
            return ref.text
        return resolve(context, ref)

    return value_of


def render_for_role(job: JobProtocol, role: str, value: Any, *, secrets: bool = True) -> Any:
    """Every text inside ``value`` (text, list or mapping) with its markers rendered for
    ``role``, as OpenPAI's runtime renders plugin parameters and prerequisite callbacks.
    ``secrets=False`` leaves ``<% $secrets.x %>`` of declared secrets in place."""
    value_of = _value_of(role_context(job, role, secrets=secrets), job, secrets)

    def walk(item: Any) -> Any:
        if isinstance(item, str):
            return render(item, value_of)
        if isinstance(item, list):
            return [walk(v) for v in item]
        if isinstance(item, dict):
            return {k: walk(v) for k, v in item.items()}
        return item

    return walk(value)


def role_command_lines(job: JobProtocol, role: str) -> list[str]:
    """preCommands of the default deployment, the role's commands, then postCommands,
    as written."""
    lines: list[str] = []
    deployment = job.deployment()
    dep_role = deployment.task_roles.get(role) if deployment else None
    if dep_role:
        lines += dep_role.pre_commands
    lines += job.task_roles[role].commands
    if dep_role:
        lines += dep_role.post_commands
    return lines


def task_commands(job: JobProtocol, role: str, *, secrets: bool = True) -> list[str]:
    """The role's command lines (:func:`role_command_lines`) with markers rendered.

    ``secrets=False`` leaves ``<% $secrets.x %>`` in place (for manifests a backend stores
    where users can read them; the values then come from a Secret at run time)."""
    rendered: list[str] = render_for_role(job, role, role_command_lines(job, role), secrets=secrets)
    return rendered


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
