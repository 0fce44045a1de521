"""``git``: clone ``repo_uri`` (with ``options``) into ``clone_dir`` (default ``code``),
relative to the task's working directory, before the user's commands. Like OpenPAI, a
``clone_dir`` that exists and is not empty fails the task (git refuses to clone into it)."""

from __future__ import annotations

from ...errors import FieldError
from ...spec.protocol import JobProtocol
from ..shell import shell_word
from ..uses import PluginUse
from .base import LOCAL, Plugin, Sections, command_lines

DEFAULT_CLONE_DIR = "code"


class Git(Plugin):
    name = "git"

    def errors(self, use: PluginUse) -> list[FieldError]:
        p = use.parameters
        errors: list[FieldError] = []
        uri = p.get("repo_uri")
        if not isinstance(uri, str) or not uri.strip():
            errors.append(
                FieldError(
                    use.field_path("repo_uri"),
                    "runtime plugin git: needs repo_uri, the repository to clone",
                )
            )
        if "options" in p and command_lines(p["options"]) is None:
            errors.append(
                FieldError(
                    use.field_path("options"),
                    "runtime plugin git: must be a list of git clone options",
                )
            )
        clone_dir = p.get("clone_dir")
        if clone_dir is not None and (not isinstance(clone_dir, str) or not clone_dir.strip()):
            errors.append(
                FieldError(use.field_path("clone_dir"), "runtime plugin git: must be a directory")
            )
        return errors

    def warnings(self, use: PluginUse, job: JobProtocol, backend: str) -> list[FieldError]:
        tasks = sum(job.task_roles[r].instances for r in use.roles)
        if backend == LOCAL and tasks > 1:
            clone_dir = use.parameters.get("clone_dir") or DEFAULT_CLONE_DIR
            return [
                FieldError(
                    use.path,
                    f"runtime plugin git: the {tasks} tasks that clone share one working "
                    f"directory on the local backend, so all but the first find {clone_dir} "
                    "not empty and fail; give each role its own clone_dir or use one task",
                )
            ]
        return []

    def sections(self, use: PluginUse, job: JobProtocol, backend: str) -> Sections:
        p = use.parameters
        # Options are written as they are: OpenPAI (GitPython) splits them like a shell.
        options = command_lines(p.get("options", [])) or []
        clone_dir = str(p.get("clone_dir") or DEFAULT_CLONE_DIR)
        words = ["git", "clone", *options, shell_word(str(p["repo_uri"])), shell_word(clone_dir)]
        return Sections(pre=[" ".join(words)])
