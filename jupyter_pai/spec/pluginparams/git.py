"""``git``'s parameters: ``repo_uri`` to clone, ``options`` for ``git clone`` and
``clone_dir``.

Options are split into words as OpenPAI's GitPython splits them (like a shell) and checked
against a list of git clone options that only choose what to fetch: GitPython refuses
those that run commands or set git's configuration (``--upload-pack``, ``-u``,
``--config``, ``-c``, ``--template``, …) and remote-helper URLs (``ext::…`` runs a
command); here an allow-list also covers git's abbreviated (``--upload-p``) and bundled
(``-qu``) spellings."""

from __future__ import annotations

import re
from collections.abc import Collection

from ...errors import FieldError
from .cmd import command_lines
from .shellwords import split_words
from .uses import PluginUse

#: Options whose value is the next word (or follows ``=``; short ones also ``-bmain``).
VALUE_OPTIONS = frozenset(
    {
        "--branch",
        "-b",
        "--depth",
        "--origin",
        "-o",
        "--jobs",
        "-j",
        "--filter",
        "--shallow-since",
        "--shallow-exclude",
        "--reference",
        "--reference-if-able",
        "--revision",
        "--server-option",
    }
)
#: Options without a value (the first two may take ``=<pathspec>``).
FLAG_OPTIONS = frozenset(
    {
        "--recurse-submodules",
        "--recursive",
        "--no-recurse-submodules",
        "--shallow-submodules",
        "--no-shallow-submodules",
        "--remote-submodules",
        "--no-remote-submodules",
        "--also-filter-submodules",
        "--single-branch",
        "--no-single-branch",
        "--no-tags",
        "--sparse",
        "--no-checkout",
        "-n",
        "--bare",
        "--mirror",
        "--local",
        "-l",
        "--no-local",
        "--no-hardlinks",
        "--shared",
        "-s",
        "--dissociate",
        "--reject-shallow",
        "--no-reject-shallow",
        "--quiet",
        "-q",
        "--verbose",
        "-v",
        "--progress",
        "--ipv4",
        "-4",
        "--ipv6",
        "-6",
    }
)
OPTIONAL_VALUE = frozenset({"--recurse-submodules", "--recursive"})
#: ``<transport>::<address>``: git runs the remote helper ``git-remote-<transport>``.
REMOTE_HELPER = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*::")
REFUSED = (
    "is not an allowed git clone option: only options that choose what to fetch are passed "
    "to git (--depth, --branch, --single-branch, --recurse-submodules, --filter, …); those "
    "that run commands or set git's configuration (--upload-pack, -u, --config, -c, "
    "--template, --separate-git-dir) are refused, as OpenPAI's GitPython refuses them"
)

Problem = tuple[int, str]


def option_words(
    options: list[str], secrets: Collection[str] = ()
) -> tuple[list[str], Problem | None]:
    """The words ``options`` pass to ``git clone``, and the first thing wrong with them as
    (index of the item, message); ``secrets``: secret markers kept whole (see
    :func:`.shellwords.split_words`)."""
    words: list[str] = []
    wants_value: str | None = None
    for i, item in enumerate(options):
        try:
            item_words = split_words(item, secrets)
        except ValueError as exc:
            return words, (i, f"cannot be split into words as a shell does ({exc})")
        for word in item_words:
            words.append(word)
            if wants_value is not None:
                wants_value = None  # git takes the next word as the value, whatever it is
                continue
            name, has_value = word.split("=", 1)[0], "=" in word
            short = word[:2] if re.fullmatch(r"-[A-Za-z0-9]", word[:2]) else None
            if name in VALUE_OPTIONS and word.startswith("--"):
                wants_value = None if has_value else name
            elif name in FLAG_OPTIONS and (not has_value or name in OPTIONAL_VALUE):
                pass
            elif short in VALUE_OPTIONS:
                wants_value = short if word == short else None  # else -bmain
            elif word.startswith("-"):
                return words, (i, f"{word!r} {REFUSED}")
            else:
                return words, (
                    i,
                    f"{word!r} is not an option (a value follows its option: --branch main)",
                )
    if wants_value is not None:
        return words, (len(options) - 1, f"{wants_value} needs a value")
    return words, None


def _leading_dash(value: object) -> bool:
    return isinstance(value, str) and value.startswith("-")


def errors(use: PluginUse) -> list[FieldError]:
    """Parameters OpenPAI's git plugin (and GitPython) would fail on or refuse."""
    p = use.parameters
    found: list[FieldError] = []
    uri = p.get("repo_uri")
    if not isinstance(uri, str) or not uri.strip():
        found.append(
            FieldError(
                use.field_path("repo_uri"),
                "runtime plugin git: needs repo_uri, the repository to clone",
            )
        )
    elif REMOTE_HELPER.match(uri):
        found.append(
            FieldError(
                use.field_path("repo_uri"),
                f"runtime plugin git: {uri.split('::', 1)[0]}:: URLs make git run a remote "
                "helper (ext:: runs any command); they are refused, as OpenPAI's GitPython "
                "refuses them",
            )
        )
    if "options" in p:
        if command_lines(p["options"]) is None:
            found.append(
                FieldError(
                    use.field_path("options"),
                    "runtime plugin git: must be a list of git clone options",
                )
            )
        else:
            found += _option_errors(use)
    clone_dir = p.get("clone_dir")
    if clone_dir is not None and (not isinstance(clone_dir, str) or not clone_dir.strip()):
        found.append(
            FieldError(use.field_path("clone_dir"), "runtime plugin git: must be a directory")
        )
    for key in ("repo_uri", "clone_dir"):
        if _leading_dash(p.get(key)):
            found.append(
                FieldError(
                    use.field_path(key),
                    "runtime plugin git: must not start with '-' (git would read it as an option)",
                )
            )
    return found


def _option_errors(use: PluginUse) -> list[FieldError]:
    value = use.parameters["options"]
    _, problem = option_words(command_lines(value) or [], use.kept_secrets)
    if problem is None:
        return []
    i, message = problem
    path = use.field_path("options")
    return [
        FieldError(
            path if isinstance(value, str) else f"{path}.{i}", f"runtime plugin git: {message}"
        )
    ]
