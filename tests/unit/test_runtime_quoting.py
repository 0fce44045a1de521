"""How values are written into a task's bash script: the marker pattern that decides which
``<% $secrets.x %>`` stay in place for Kubernetes (identifier-like names only), and
``shell_word``, which keeps exactly the secret markers it is given and makes everything else
one literal word."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from jupyter_pai.runtime import plugin_uses
from jupyter_pai.runtime.shell import shell_word
from jupyter_pai.spec import parse_job
from jupyter_pai.spec.pluginparams.shellwords import split_words
from jupyter_pai.spec.templating import MARKER


@pytest.mark.parametrize(
    ("marker", "scope", "key"),
    [
        ("<% $secrets.token %>", "secrets", "token"),
        ("<%$secrets.hf_token%>", "secrets", "hf_token"),
        ("<% $secrets.docker-password %>", "secrets", "docker-password"),
        ("<% $secrets.azure.key %>", "secrets", "azure.key"),
        ("<% $secrets.keys[0] %>", "secrets", "keys[0]"),
        ("<% $secrets.keys.0 %>", "secrets", "keys.0"),
        ("<% $parameters %>", "parameters", None),
    ],
)
def test_marker_pattern_accepts_identifier_like_names(
    marker: str, scope: str, key: str | None
) -> None:
    m = MARKER.fullmatch(marker)
    assert m is not None and m["scope"] == scope and m["key"] == key


@pytest.mark.parametrize(
    "key",
    [
        "$(touch pwned)",
        "$(touch${IFS}pwned)",
        "`touch${IFS}pwned`",
        "${IFS}",
        "token;touch${IFS}pwned",
        "token|id",
        "token&&id",
        '"token"',
        "'token'",
        "to\\ken",
        "token>out",
        "token*",
        "to ken",
        "to\nken",
        "token.",
        ".token",
        "a..b",
    ],
)
def test_marker_pattern_refuses_shell_syntax_in_names(key: str) -> None:
    assert MARKER.search(f"<% $secrets.{key} %>") is None


def test_shell_word_keeps_only_the_secret_markers_it_is_given() -> None:
    text = "a <% $secrets.token %> <% $secrets.other %> <% $parameters.x %>"
    assert shell_word(text, {"token"}) == (
        '"a <% $secrets.token %> <% \\$secrets.other %> <% \\$parameters.x %>"'
    )
    assert shell_word(text) == (
        '"a <% \\$secrets.token %> <% \\$secrets.other %> <% \\$parameters.x %>"'
    )


@pytest.mark.parametrize(
    "text",
    [
        "$(touch pwned)",
        "`touch pwned`",
        '"; touch pwned; "',
        '\\"; touch pwned; \\"',
        "\\",
        "'",
        "\ntouch pwned\n",
        "${IFS}$HOME!*?[a]~",
        "<% $secrets.token %>",
        "<% $secrets.$(touch${IFS}pwned) %>",
    ],
)
def test_bash_reads_a_quoted_word_back_as_written(text: str, tmp_path: Path) -> None:
    done = subprocess.run(
        ["bash", "-c", f"printf %s {shell_word(text)}"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout == text
    assert not list(tmp_path.iterdir())


def test_split_words_keeps_secret_markers_whole() -> None:
    assert split_words("--branch <% $secrets.b %> -q", {"b"}) == [
        "--branch",
        "<% $secrets.b %>",
        "-q",
    ]
    assert split_words("--branch 'a b'") == ["--branch", "a b"]


JOB = """
protocolVersion: 2
name: kept
type: job
secrets: {token: s3cr3t, "a;b": x}
taskRoles:
  main: {commands: ['true']}
extras:
  com.microsoft.pai.runtimeplugin:
    - plugin: tensorboard
      parameters: {logdir: '/logs/<% $secrets.token %>/<% $secrets.nope %>/<% $secrets.a;b %>'}
"""


def test_only_declared_identifier_secrets_are_left_for_the_backend() -> None:
    job = parse_job(JOB).job
    assert plugin_uses(job, "main", secrets=False)[0].kept_secrets == frozenset({"token"})
    # Filled in here: nothing is left for the backend.
    assert plugin_uses(job, "main")[0].kept_secrets == frozenset()


def test_a_declared_secret_whose_name_a_task_cannot_take_is_warned_about() -> None:
    path = "extras.com.microsoft.pai.runtimeplugin.0.parameters.logdir"
    messages = [w.message for w in parse_job(JOB).warnings if w.path == path]
    assert any("<% $secrets.a;b %>" in m and "Kubernetes" in m for m in messages), messages
