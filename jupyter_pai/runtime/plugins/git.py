"""``git``: clone ``repo_uri`` (with ``options``) into ``clone_dir`` (default ``code``),
relative to the task's working directory, before the user's commands. Like OpenPAI, a
``clone_dir`` that exists and is not empty fails the task (git refuses to clone into it).

Every value is data: each word of ``options`` (checked at submission, see
:mod:`jupyter_pai.spec.pluginparams.git`) is passed as one quoted argument, and ``--``
comes before the repository and the directory."""

from __future__ import annotations

from ...errors import FieldError
from ...spec.pluginparams.cmd import command_lines
from ...spec.pluginparams.git import option_words
from ...spec.pluginparams.uses import PluginUse
from ...spec.protocol import JobProtocol
from ..shell import quoted_message, shell_word
from .base import LOCAL, Plugin, Sections

DEFAULT_CLONE_DIR = "code"


class Git(Plugin):
    name = "git"

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
        kept = use.kept_secrets
        # Checked again: secrets filled in since submission may have added words. The words
        # are not shown (they hold a secret).
        words, problem = option_words(command_lines(p.get("options", [])) or [], kept)
        if problem is not None:
            message = (
                "runtime plugin git: once secrets are filled in, options hold words that are "
                "not allowed git clone options; git does not run"
            )
            return Sections(pre=[quoted_message(message), "exit 1"])
        clone_dir = str(p.get("clone_dir") or DEFAULT_CLONE_DIR)
        args = [shell_word(w, kept) for w in words]
        args += ["--", shell_word(str(p["repo_uri"]), kept), shell_word(clone_dir, kept)]
        return Sections(pre=[" ".join(["git", "clone", *args])])
