"""Runtime plugin git's command line: options split like a shell (as OpenPAI's GitPython
splits them), each word passed quoted, ``--`` before the repository and directory, and the
options, URLs and directories that would make git run something refused at submission."""

from __future__ import annotations

import pytest

from jupyter_pai.backends.kubernetes.pods import role_script, secret_variables
from jupyter_pai.errors import SpecError
from jupyter_pai.runtime import task_script
from jupyter_pai.spec import JobProtocol, parse_job

ENTRY = "extras.com.microsoft.pai.runtimeplugin.0.parameters"
REPO = "https://example.com/team/repo.git"


def job_doc(**parameters: object) -> dict[str, object]:
    return {
        "protocolVersion": 2,
        "name": "gitjob",
        "type": "job",
        "secrets": {"branch": "release", "depth": "1 --upload-pack=touch pwned"},
        "taskRoles": {"main": {"commands": ["true"]}},
        "extras": {
            "com.microsoft.pai.runtimeplugin": [{"plugin": "git", "parameters": parameters}]
        },
    }


def git_line(script: str) -> str:
    lines = [line for line in script.splitlines() if line.startswith("git ")]
    assert len(lines) == 1, script
    return lines[0]


def refusals(**parameters: object) -> dict[str, str]:
    with pytest.raises(SpecError) as info:
        parse_job(job_doc(**parameters))
    return {e.path: e.message for e in info.value.errors}


def test_options_are_split_like_a_shell_and_each_word_is_quoted() -> None:
    job = parse_job(job_doc(repo_uri=REPO, options=["--depth 1", "--branch 'my branch'"])).job
    assert git_line(task_script(job, "main", backend="local")) == (
        f'git clone "--depth" "1" "--branch" "my branch" -- "{REPO}" "code"'
    )


def test_an_option_and_its_value_may_be_separate_items_as_on_openpai() -> None:
    job = parse_job(job_doc(repo_uri=REPO, options=["--depth", "1", "-b", "main"])).job
    assert git_line(task_script(job, "main", backend="local")) == (
        f'git clone "--depth" "1" "-b" "main" -- "{REPO}" "code"'
    )


def test_repository_and_directory_come_after_a_double_dash() -> None:
    job = parse_job(job_doc(repo_uri=REPO, clone_dir="src dir")).job
    assert git_line(task_script(job, "main", backend="local")) == (
        f'git clone -- "{REPO}" "src dir"'
    )


@pytest.mark.parametrize(
    "option",
    [
        "--upload-pack=touch pwned",
        "--upload-pack touch",
        "-u touch",
        "-utouch",
        "--config core.sshCommand=touch",
        "-c core.hooksPath=/tmp/hooks",
        "-ccore.hooksPath=/tmp/hooks",
        "--template=/tmp/hooks",
        "--separate-git-dir=/tmp/elsewhere",
        "--upload-p=touch",  # git takes unambiguous abbreviations
        "--conf=core.sshCommand=touch",
        "-qu touch",  # short options bundled
        "--depth 1 --upload-pack=touch",
    ],
)
def test_options_that_make_git_run_commands_are_refused(option: str) -> None:
    found = refusals(repo_uri=REPO, options=[option])
    assert "is not an allowed git clone option" in found[f"{ENTRY}.options.0"]


@pytest.mark.parametrize(
    ("options", "path", "message"),
    [
        (["--single-branch main"], "options.0", "'main' is not an option"),
        (["--depth"], "options.0", "--depth needs a value"),
        (["--branch 'unbalanced"], "options.0", "cannot be split into words"),
        (["--depth 1", "; touch pwned"], "options.1", "';' is not an option"),
        (["$(touch pwned)"], "options.0", "is not an option"),
    ],
)
def test_words_that_are_not_options_are_refused(
    options: list[str], path: str, message: str
) -> None:
    found = refusals(repo_uri=REPO, options=options)
    assert message in found[f"{ENTRY}.{path}"], found


def test_a_leading_dash_in_repository_or_directory_is_refused() -> None:
    found = refusals(repo_uri="--upload-pack=touch pwned", clone_dir="-x")
    assert "must not start with '-'" in found[f"{ENTRY}.repo_uri"]
    assert "must not start with '-'" in found[f"{ENTRY}.clone_dir"]


def test_remote_helper_urls_are_refused_as_openpai_refuses_them() -> None:
    found = refusals(repo_uri="ext::sh -c touch% pwned")
    assert "ext::" in found[f"{ENTRY}.repo_uri"]


def test_a_secret_in_an_option_value_stays_one_word_on_kubernetes() -> None:
    job = JobProtocol.model_validate(
        job_doc(repo_uri=REPO, options=["--branch <% $secrets.branch %>"])
    )
    assert parse_job(job_doc(repo_uri=REPO, options=["--branch <% $secrets.branch %>"]))
    line = git_line(task_script(job, "main", backend="kubernetes", secrets=False))
    assert line == f'git clone "--branch" "<% $secrets.branch %>" -- "{REPO}" "code"'
    pod = git_line(role_script(job, "main", secret_variables(job)))
    assert pod == f'git clone "--branch" "${{PAI_SECRET_branch}}" -- "{REPO}" "code"'


def test_a_secret_that_fills_in_an_unsafe_option_fails_the_task_instead() -> None:
    """Locally secrets are filled in before the options are split: what they hold is
    checked again, and the task fails without running git."""
    job = JobProtocol.model_validate(
        job_doc(repo_uri=REPO, options=["--depth <% $secrets.depth %>"])
    )
    script = task_script(job, "main", backend="local")
    assert not [line for line in script.splitlines() if line.startswith("git ")], script
    assert "exit 1" in script.splitlines()
    assert "not allowed git clone options; git does not run" in script
    assert "upload-pack" not in script  # nothing of the secret is shown
