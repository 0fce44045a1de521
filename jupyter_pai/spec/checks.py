"""Checks across fields that pydantic's per-field validation cannot see.

Each returns :class:`FieldError` objects with the protocol's own field path, so users read
``taskRoles.worker.dockerImage: …`` exactly where they wrote it.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..errors import FieldError
from .protocol import KNOWN_RUNTIME_PLUGINS, JobProtocol, TaskRole
from .templating import PREREQUISITE_KEYS, SCOPES, lookup, malformed, references

PLUGINS = "extras.com.microsoft.pai.runtimeplugin"


def _duplicates(names: Iterable[str]) -> list[tuple[int, str]]:
    seen: set[str] = set()
    found: list[tuple[int, str]] = []
    for i, name in enumerate(names):
        if name in seen:
            found.append((i, name))
        seen.add(name)
    return found


def check_job(job: JobProtocol) -> list[FieldError]:
    errors: list[FieldError] = []
    for i, name in _duplicates(p.name for p in job.prerequisites):
        errors.append(FieldError(f"prerequisites.{i}.name", f"duplicate name {name!r}"))
    by_name = {p.name: p for p in job.prerequisites}
    for i, pre in enumerate(job.prerequisites):
        for j, ref in enumerate(pre.require):
            if ref not in by_name:
                errors.append(
                    FieldError(
                        f"prerequisites.{i}.require.{j}", f"no prerequisite is named {ref!r}"
                    )
                )
        for j, callback in enumerate(pre.callbacks):
            for k, line in enumerate(callback.commands):
                path = f"prerequisites.{i}.callbacks.{j}.commands.{k}"
                errors += _check_markers(job, None, path, line)

    for role_name, role in job.task_roles.items():
        base = f"taskRoles.{role_name}"
        if role.docker_image is not None:
            image = by_name.get(role.docker_image)
            if image is None or image.type != "dockerimage":
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
            if ref is not None and (ref not in by_name or by_name[ref].type != field):
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
        for j, command in enumerate(role.commands):
            errors += _check_markers(job, role, f"{base}.commands.{j}", command)

    for i, name in _duplicates(d.name for d in job.deployments):
        errors.append(FieldError(f"deployments.{i}.name", f"duplicate deployment name {name!r}"))
    for i, dep in enumerate(job.deployments):
        for role_name, dep_role in dep.task_roles.items():
            if role_name not in job.task_roles:
                errors.append(
                    FieldError(
                        f"deployments.{i}.taskRoles.{role_name}",
                        f"no task role is named {role_name!r}",
                    )
                )
                continue
            role = job.task_roles[role_name]
            for kind, lines in (
                ("preCommands", dep_role.pre_commands),
                ("postCommands", dep_role.post_commands),
            ):
                for j, line in enumerate(lines):
                    path = f"deployments.{i}.taskRoles.{role_name}.{kind}.{j}"
                    errors += _check_markers(job, role, path, line)
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
    warnings: list[FieldError] = []
    for i, plugin in enumerate(job.extras.runtime_plugins):
        if plugin.plugin not in KNOWN_RUNTIME_PLUGINS:
            warnings.append(
                FieldError(
                    f"{PLUGINS}.{i}.plugin",
                    f"unknown runtime plugin {plugin.plugin!r} (known: "
                    f"{', '.join(KNOWN_RUNTIME_PLUGINS)}), ignored",
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


def _check_markers(
    job: JobProtocol, role: TaskRole | None, path: str, text: str
) -> list[FieldError]:
    errors: list[FieldError] = []
    for piece in malformed(text):
        errors.append(FieldError(path, f"malformed marker {piece!r}; write <% $parameters.NAME %>"))
    for ref in references(text):
        if ref.scope not in SCOPES:
            known = ", ".join("$" + s for s in SCOPES)
            errors.append(FieldError(path, f"unknown marker ${ref.scope}; use one of {known}"))
        elif ref.scope in ("parameters", "secrets"):
            values = job.parameters if ref.scope == "parameters" else job.secrets
            try:
                lookup(values, ref.key)
            except KeyError:
                errors.append(
                    FieldError(path, f"${ref.scope}.{ref.key} is not defined in {ref.scope}")
                )
        elif role is None or getattr(role, ref.scope) is None:
            errors.append(
                FieldError(
                    path, f"${ref.scope} is used but the role names no {ref.scope} prerequisite"
                )
            )
        elif ref.key not in PREREQUISITE_KEYS:
            errors.append(
                FieldError(
                    path,
                    f"${ref.scope}.{ref.key}: a prerequisite marker reads "
                    + " or ".join(PREREQUISITE_KEYS),
                )
            )
    return errors
