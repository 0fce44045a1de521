"""Checks across fields that pydantic's per-field validation cannot see.

Each returns :class:`FieldError` objects with the protocol's own field path, so users read
``taskRoles.worker.dockerImage: …`` exactly where they wrote it.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from typing import TypeVar

from ..errors import FieldError
from .protocol import JobProtocol
from .render import role_context
from .templating import MARKER, MISSING, SCOPES, Reference, lookup, references, resolve

T = TypeVar("T", bound=Hashable)
PLUGINS = "extras.com.microsoft.pai.runtimeplugin"
#: (Task role, line) and (task role, marker) pairs checked at most, a marker repeated in
#: one line counting once: a hundred roles of two hundred lines and markers each.
MAX_MARKER_CHECKS = 20_000


def _duplicates(names: Iterable[T]) -> list[tuple[int, T]]:
    seen: set[T] = set()
    found: list[tuple[int, T]] = []
    for i, name in enumerate(names):
        if name in seen:
            found.append((i, name))
        seen.add(name)
    return found


def check_job(job: JobProtocol) -> list[FieldError]:
    errors: list[FieldError] = []
    # Names are unique per type (OpenPAI's own example names an image and a script alike).
    for i, (type_, name) in _duplicates((p.type, p.name) for p in job.prerequisites):
        errors.append(
            FieldError(f"prerequisites.{i}.name", f"duplicate {type_} prerequisite name {name!r}")
        )
    by_name = {p.name: p for p in job.prerequisites}
    for i, pre in enumerate(job.prerequisites):
        for j, ref in enumerate(pre.require):
            if ref not in by_name:
                errors.append(
                    FieldError(
                        f"prerequisites.{i}.require.{j}", f"no prerequisite is named {ref!r}"
                    )
                )

    for role_name, role in job.task_roles.items():
        base = f"taskRoles.{role_name}"
        if role.docker_image is not None:
            if job.prerequisite(role.docker_image, "dockerimage") is None:
                known = sorted(p.name for p in job.prerequisites if p.type == "dockerimage")
                hint = f" (known: {', '.join(known)})" if known else ""
                errors.append(
                    FieldError(
                        f"{base}.dockerImage",
                        f"{role.docker_image!r} is not the name of a dockerimage prerequisite"
                        + hint,
                    )
                )
        for field in ("data", "output", "script"):
            ref = getattr(role, field)
            if ref is not None and job.prerequisite(ref, field) is None:
                errors.append(
                    FieldError(
                        f"{base}.{field}", f"{ref!r} is not the name of a {field} prerequisite"
                    )
                )
        for j, ref in enumerate(role.prerequisites):
            if ref not in by_name:
                errors.append(
                    FieldError(f"{base}.prerequisites.{j}", f"no prerequisite is named {ref!r}")
                )
        for alias, value in (
            ("minFailedInstances", role.completion.min_failed_instances),
            ("minSucceededInstances", role.completion.min_succeeded_instances),
        ):
            if value is not None and value > role.instances:
                errors.append(
                    FieldError(
                        f"{base}.completion.{alias}",
                        f"is {value} but the role has only {role.instances} instance"
                        + ("s" if role.instances != 1 else ""),
                    )
                )

    for i, name in _duplicates(d.name for d in job.deployments):
        errors.append(FieldError(f"deployments.{i}.name", f"duplicate deployment name {name!r}"))
    for i, dep in enumerate(job.deployments):
        for role_name in dep.task_roles:
            if role_name not in job.task_roles:
                errors.append(
                    FieldError(
                        f"deployments.{i}.taskRoles.{role_name}",
                        f"no task role is named {role_name!r}",
                    )
                )
    deployment = job.defaults.deployment
    if deployment is not None and deployment not in {d.name for d in job.deployments}:
        errors.append(FieldError("defaults.deployment", f"no deployment is named {deployment!r}"))

    storages = job.extras.storages
    for i, name in _duplicates(s.name for s in storages):
        errors.append(FieldError(f"extras.storages.{i}.name", f"storage {name!r} is listed twice"))
    for i, path in _duplicates(s.effective_mount_path for s in storages):
        errors.append(
            FieldError(f"extras.storages.{i}.mountPath", f"{path} is already used by a storage")
        )
    hived = job.extras.hived_scheduler
    if hived is not None:
        for role_name, hived_role in hived.task_roles.items():
            base = f"extras.hivedScheduler.taskRoles.{role_name}"
            if role_name not in job.task_roles:
                errors.append(FieldError(base, f"no task role is named {role_name!r}"))
            if hived_role.sku_type is not None and hived_role.pinned_cell_id is not None:
                errors.append(
                    FieldError(
                        f"{base}.pinnedCellId", "give either skuType or pinnedCellId, not both"
                    )
                )
    for i, plugin in enumerate(job.extras.runtime_plugins):
        for j, role_name in enumerate(plugin.taskroles or []):
            if role_name not in job.task_roles:
                errors.append(
                    FieldError(
                        f"{PLUGINS}.{i}.taskroles.{j}", f"no task role is named {role_name!r}"
                    )
                )
    return errors


def job_warnings(job: JobProtocol) -> list[FieldError]:
    """Things that are valid but probably not what the user meant."""
    # Runtime plugins are judged per backend at submission (jupyter_pai.runtime).
    warnings: list[FieldError] = marker_warnings(job)
    for role_name, role in job.task_roles.items():
        for alias, value, default in (
            ("minFailedInstances", role.completion.min_failed_instances, "1"),
            ("minSucceededInstances", role.completion.min_succeeded_instances, "every instance"),
        ):
            if value == 0:
                warnings.append(
                    FieldError(
                        f"taskRoles.{role_name}.completion.{alias}",
                        f"0 means the default ({default}), as on OpenPAI",
                    )
                )
    if job.deployments and job.defaults.deployment is None:
        warnings.append(
            FieldError(
                "defaults.deployment",
                "deployments are listed but none is chosen here, so none is applied",
            )
        )
    return warnings


def marker_warnings(job: JobProtocol) -> list[FieldError]:
    """Markers that resolve to nothing: OpenPAI leaves them in the command as written, so
    they are warnings, each at the line that holds it (once per role that renders it).

    Plugin parameters and callbacks are rendered once per role: each text is scanned once,
    and past :data:`MAX_MARKER_CHECKS` pairs the rest go unchecked, so many roles times
    many markers costs no more than one large job."""
    found: dict[FieldError, None] = {}  # in order, once each
    scanned: dict[str, list[Reference]] = {}
    checks = 0
    deployment = job.deployment()
    dep_index = job.deployments.index(deployment) if deployment else -1
    callbacks: dict[str, list[tuple[int, list[tuple[str, str]]]]] = {}
    for i, pre in enumerate(job.prerequisites):
        run = [
            (f"prerequisites.{i}.callbacks.{j}.commands.{k}", line)
            for j, callback in enumerate(pre.callbacks)
            for k, line in enumerate(callback.commands)
        ]
        if run:
            callbacks.setdefault(pre.name, []).append((i, run))
    plugin_texts = [
        [(f"{PLUGINS}.{i}.parameters{path}", text) for path, text in _texts(plugin.parameters)]
        for i, plugin in enumerate(job.extras.runtime_plugins)
    ]
    for role in job.task_roles:
        context = role_context(job, role)
        places = [
            (f"taskRoles.{role}.commands.{j}", c)
            for j, c in enumerate(job.task_roles[role].commands)
        ]
        dep_role = deployment.task_roles.get(role) if deployment else None
        for kind, lines in (
            ("preCommands", dep_role.pre_commands if dep_role else []),
            ("postCommands", dep_role.post_commands if dep_role else []),
        ):
            base = f"deployments.{dep_index}.taskRoles.{role}.{kind}"
            places += [(f"{base}.{j}", line) for j, line in enumerate(lines)]
        named = dict.fromkeys(job.task_roles[role].prerequisites)
        for _, run in sorted(c for name in named for c in callbacks.get(name, [])):
            places += run
        for i, plugin in enumerate(job.extras.runtime_plugins):
            if plugin.taskroles is None or role in plugin.taskroles:
                places += plugin_texts[i]
        for path, text in places:
            refs = scanned.get(text)
            if refs is None:
                refs = scanned[text] = list(dict.fromkeys(references(text)))
            checks += 1 + len(refs)
            if checks > MAX_MARKER_CHECKS:
                skipped = f"more than {MAX_MARKER_CHECKS} markers to check; the rest were not"
                found[FieldError("", skipped)] = None
                return list(found)
            for ref in refs:
                if resolve(context, ref) is MISSING:
                    warning = FieldError(path, _unresolved(job, role, ref))
                elif ref.scope == "secrets" and MARKER.fullmatch(ref.text) is None:
                    warning = FieldError(path, _unpassable(ref))
                else:
                    continue
                found[warning] = None
    return list(found)


def _unpassable(ref: Reference) -> str:
    # A task's script keeps only identifier-like secret names (templating.MARKER).
    return (
        f"{ref.text}: a secret's name may hold only letters, digits, '_', '-' and '.' to "
        "reach a task on the Kubernetes backend, which leaves this marker as written "
        "(the local backend fills it in); rename the secret"
    )


def _texts(value: object, path: str = "") -> list[tuple[str, str]]:
    if isinstance(value, str):
        return [(path, value)]
    if isinstance(value, list):
        return [t for i, v in enumerate(value) for t in _texts(v, f"{path}.{i}")]
    if isinstance(value, dict):
        return [t for k, v in value.items() for t in _texts(v, f"{path}.{k}")]
    return []


def _unresolved(job: JobProtocol, role: str, ref: Reference) -> str:
    kept = f"it is left as {ref.left_as_is}, as OpenPAI leaves it"
    scope = ref.scope
    if scope not in SCOPES:
        known = ", ".join("$" + s for s in SCOPES)
        return f"{ref.text} names nothing OpenPAI renders (use {known}); {kept}"
    if scope in ("parameters", "secrets"):
        values = job.parameters if scope == "parameters" else job.secrets
        if not ref.key:
            return f"{ref.text} needs a name (<% ${scope}.NAME %>); {kept}"
        try:
            lookup(values, ref.key)
        except KeyError:
            return f"${scope}.{ref.key} is not defined in {scope}; {kept}"
        return f"${scope}.{ref.key} is empty; {kept}"
    if getattr(job.task_roles[role], scope) is None:
        return f"${scope} is used but task role {role} names no {scope} prerequisite; {kept}"
    return f"{ref.text}: the {scope} prerequisite of task role {role} has no such field; {kept}"
