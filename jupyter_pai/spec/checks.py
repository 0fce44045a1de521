"""Checks across fields that pydantic's per-field validation cannot see.

Each returns :class:`FieldError` objects with the protocol's own field path, so users read
``taskRoles.worker.dockerImage: …`` exactly where they wrote it.
"""

from __future__ import annotations

from ..errors import FieldError
from .protocol import JobProtocol
from .templating import SCOPES, lookup, references


def check_job(job: JobProtocol) -> list[FieldError]:
    errors: list[FieldError] = []
    names = [p.name for p in job.prerequisites]
    for i, name in enumerate(names):
        if names.index(name) != i:
            errors.append(FieldError(f"prerequisites.{i}.name", f"duplicate name {name!r}"))
    by_name = {p.name: p for p in job.prerequisites}

    for role_name, role in job.task_roles.items():
        base = f"taskRoles.{role_name}"
        if role.docker_image is not None:
            pre = by_name.get(role.docker_image)
            if pre is None or pre.type != "dockerimage":
                errors.append(
                    FieldError(
                        f"{base}.dockerImage",
                        f"{role.docker_image!r} is not the name of a dockerimage prerequisite"
                        + (f" (known: {', '.join(sorted(by_name))})" if by_name else ""),
                    )
                )
        for field in ("data", "output", "script"):
            ref = getattr(role, field)
            if ref is not None and (ref not in by_name or by_name[ref].type != field):
                errors.append(
                    FieldError(f"{base}.{field}", f"{ref!r} is not the name of a {field} prerequisite")
                )
        for j, ref in enumerate(role.prerequisites):
            if ref not in by_name:
                errors.append(
                    FieldError(f"{base}.prerequisites.{j}", f"no prerequisite is named {ref!r}")
                )
        for key in ("min_failed_instances", "min_succeeded_instances"):
            value = getattr(role.completion, key)
            if value is not None and value > role.instances:
                alias = "minFailedInstances" if key == "min_failed_instances" else "minSucceededInstances"
                errors.append(
                    FieldError(
                        f"{base}.completion.{alias}",
                        f"is {value} but the role has only {role.instances} instances",
                    )
                )
        for j, command in enumerate(role.commands):
            errors += _check_markers(job, role_name, f"{base}.commands.{j}", command)

    deployment_names = [d.name for d in job.deployments]
    for i, dep in enumerate(job.deployments):
        for role_name, dep_role in dep.task_roles.items():
            if role_name not in job.task_roles:
                errors.append(
                    FieldError(f"deployments.{i}.taskRoles.{role_name}", "no task role has this name")
                )
                continue
            for kind, lines in (("preCommands", dep_role.pre_commands), ("postCommands", dep_role.post_commands)):
                for j, line in enumerate(lines):
                    path = f"deployments.{i}.taskRoles.{role_name}.{kind}.{j}"
                    errors += _check_markers(job, role_name, path, line)
    if job.defaults.deployment is not None and job.defaults.deployment not in deployment_names:
        errors.append(
            FieldError("defaults.deployment", f"no deployment is named {job.defaults.deployment!r}")
        )

    storage_names = [s.name for s in job.extras.storages]
    for i, name in enumerate(storage_names):
        if storage_names.index(name) != i:
            errors.append(FieldError(f"extras.storages.{i}.name", f"storage {name!r} is listed twice"))
    hived = job.extras.hived_scheduler
    if hived is not None:
        for role_name in hived.task_roles:
            if role_name not in job.task_roles:
                errors.append(
                    FieldError(f"extras.hivedScheduler.taskRoles.{role_name}", "no task role has this name")
                )
    for i, plugin in enumerate(job.extras.runtime_plugins):
        for role_name in plugin.taskroles or []:
            if role_name not in job.task_roles:
                errors.append(
                    FieldError(
                        f"extras.com.microsoft.pai.runtimeplugin.{i}.taskroles",
                        f"no task role is named {role_name!r}",
                    )
                )
    return errors


def _check_markers(job: JobProtocol, role_name: str, path: str, text: str) -> list[FieldError]:
    errors: list[FieldError] = []
    role = job.task_roles[role_name]
    for ref in references(text):
        if ref.scope not in SCOPES:
            errors.append(FieldError(path, f"unknown marker $${ref.scope}; use one of {', '.join('$' + s for s in SCOPES)}"))
        elif ref.scope in ("parameters", "secrets"):
            values = job.parameters if ref.scope == "parameters" else job.secrets
            try:
                lookup(values, ref.key)
            except KeyError:
                errors.append(FieldError(path, f"${ref.scope}.{ref.key} is not defined in {ref.scope}"))
        elif getattr(role, ref.scope) is None:
            errors.append(FieldError(path, f"${ref.scope} is used but the role names no {ref.scope} prerequisite"))
    return errors
