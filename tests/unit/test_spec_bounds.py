"""A small or hostile document parses quickly or is refused naming the bound it passes:
YAML aliases are counted as expanded while the document is composed, markers are scanned
in linear time, and every step after parsing is linear in the document's bounded size.

Times are the process's CPU time (not wall time, which other work on the machine
stretches), with a generous bound; each test also checks what shows the work is bounded."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from jupyter_pai.errors import FieldError, SpecError
from jupyter_pai.spec import parse_job
from jupyter_pai.spec.checks import MAX_MARKER_CHECKS
from jupyter_pai.spec.document import (
    MAX_ALIASES,
    MAX_CHARACTERS,
    MAX_VALUES,
    load_document,
    parse_json,
)
from jupyter_pai.spec.parse import MAX_REPORTED
from jupyter_pai.spec.protocol import JobProtocol
from jupyter_pai.spec.templating import references, render

SECONDS = 1.0
#: The largest documents within the bounds take up to 0.6 s of CPU on a quiet machine and
#: reached 1.0 s beside the rest of the suite on 2 cores: linear work, with room for that;
#: work growing with the square of the document would take far longer.
LARGE_SECONDS = 2.0
JOB = (
    "protocolVersion: 2\nname: big\ntype: job\n"
    "prerequisites:\n  - {name: img, type: dockerimage, uri: python}\n"
)


@contextmanager
def at_most(seconds: float = SECONDS) -> Iterator[None]:
    start = time.process_time()
    yield
    spent = time.process_time() - start
    assert spent < seconds, f"took {spent:.2f}s of CPU"


def refused(source: Any) -> str:
    with pytest.raises(SpecError) as info:
        parse_job(source)
    assert info.value.status == 400
    return str(info.value.errors[0])


def alias_bomb(levels: int, fan: int = 6) -> str:
    """The review's document: each level a list of ``fan`` aliases to the one before."""
    lines = ['a0: &a0 ["lol"]'] + [
        f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * fan)}]" for i in range(1, levels + 1)
    ]
    return "name: bomb\ncommand: 'true'\nextras:\n" + "".join(f"  {line}\n" for line in lines)


def test_an_alias_bomb_is_refused_while_composing_before_anything_walks_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def never(*args: object, **kwargs: object) -> None:
        raise AssertionError("the document reached validation")

    monkeypatch.setattr(JobProtocol, "model_validate", never)
    text = alias_bomb(9)  # 10 million values, written in 422 bytes
    assert len(text) < 500
    with at_most():
        message = refused(text)
    # At the line of the alias that passes the bound: counted while composing.
    assert message == (
        f"the document holds more than {MAX_VALUES} values, aliases expanded (at line 9); "
        "the document is refused"
    )
    merges = "name: m\ncommand: 'true'\nextras:\n  m0: &m0 {k0: 1, k1: 2}\n" + "".join(
        f"  m{i}: &m{i} {{<<: [{', '.join([f'*m{i - 1}'] * 6)}]}}\n" for i in range(1, 10)
    )
    with at_most():
        assert "aliases expanded" in refused(merges)


def test_more_aliases_than_the_bound_are_refused_naming_it() -> None:
    text = "name: x\ncommand: 'true'\nparameters:\n  v: &v 1\n  many: [" + ", ".join(
        ["*v"] * (MAX_ALIASES + 1)
    )
    text += "]\n"
    assert refused(text) == (
        f"the document uses more than {MAX_ALIASES} aliases (at line 5); the document is refused"
    )


def test_aliases_repeating_long_text_are_bounded_by_the_text_they_expand_to() -> None:
    line = "<%a%>" * 20_000  # 100 KB, repeated by 999 aliases: 100 MB to scan
    text = f"name: x\nparameters:\n  s: &s '{line}'\ncommand: [{', '.join(['*s'] * 999)}]\n"
    with at_most():
        message = refused(text)
    assert f"more than {MAX_CHARACTERS} characters of text, aliases expanded" in message


def test_anchors_and_merges_of_an_ordinary_job_still_work() -> None:
    text = (
        JOB + "x-common: &common {dockerImage: img, commands: [echo hi]}\n"
        "taskRoles:\n  a: {<<: *common, instances: 2}\n  b: *common\n"
    )
    job = parse_job(text).job
    assert job.task_roles["a"].instances == 2
    assert job.task_roles["b"].commands == ["echo hi"]


@pytest.mark.parametrize(
    "text",
    ["name: x\nextras: &a [*a]\n", "name: x\nextras: &a {x: *a}\n"],
    ids=["list", "mapping"],
)
def test_an_alias_inside_its_own_anchor_is_refused(text: str) -> None:
    assert refused(text) == (
        "an alias refers to the value that contains it (at line 2); the document is refused"
    )


@pytest.mark.parametrize(
    "text",
    [
        "".join(" " * i + "-\n" for i in range(1200)),  # block style
        "a: " + "[" * 200_000,  # flow style
        "[" * 200_000,  # JSON
        json.dumps({"name": "x", "parameters": json.loads("[" * 500 + "]" * 500)}),
    ],
    ids=["yaml-block", "yaml-flow", "json-open", "json-closed"],
)
def test_deep_nesting_is_refused_not_a_recursion_error(text: str) -> None:
    with at_most():
        message = refused(text)
    assert "nest" in message, message


def test_a_deeply_nested_json_body_is_refused_by_parse_json() -> None:
    for body in ("[" * 100_000, "[" * 500 + "]" * 500):
        with pytest.raises(SpecError) as info:
            parse_json(body)
        assert "nest" in str(info.value.errors[0])


def test_a_value_python_cannot_read_is_refused_at_its_line() -> None:
    digits = "9" * 100_000
    assert refused(f"name: x\ncommand: 'true'\ngpus: {digits}\n").startswith(
        "not valid YAML or JSON at line 3, column 7: cannot read this value: Exceeds the limit"
    )
    assert refused('{"name": "x", "gpus": ' + digits + "}").startswith(
        "not valid YAML or JSON at line 1, column 23: cannot read this value"
    )
    assert refused("name: 2020-13-45\ncommand: 'true'\n") == (
        "not valid YAML or JSON at line 1, column 7: cannot read this value: month must be in 1..12"
    )


def test_a_document_over_the_value_bound_is_refused_without_aliases_too() -> None:
    flat = JOB + "parameters: {x: [" + ",".join(["1"] * MAX_VALUES) + "]}\n"
    with at_most():
        assert f"more than {MAX_VALUES} values" in refused(flat)
    as_json = json.dumps({"name": "x", "command": "true", "parameters": {"x": [1] * MAX_VALUES}})
    with at_most():
        assert f"more than {MAX_VALUES} values" in refused(as_json)
    with at_most():
        assert f"more than {MAX_VALUES} values" in refused(json.loads(as_json))


def test_a_key_written_twice_is_found_once_however_many_aliases_reach_it() -> None:
    text = (
        "name: x\ncommand: 'true'\nextras:\n  a: &a {k: 1, k: 2}\n"
        f"  b: [{', '.join(['*a'] * 500)}]\n"
    )
    with pytest.raises(SpecError) as info:
        load_document(text)
    assert info.value.errors == [FieldError("extras.a.k", "is written twice (again at line 4)")]


# -- markers ---------------------------------------------------------------------------


def old_references(text: str) -> list[str]:
    """What OpenPAI's mustache reads as tags, by the definition the scan replaced (a lazy
    match, quadratic on unclosed tags): the oracle for short texts."""
    return [m.group(1) for m in re.finditer(r"<%(.*?)%>", text, re.DOTALL)]


@pytest.mark.parametrize(
    "text",
    ["<%" * 20_000, "<%" * 200_000, "<%$a." * 100_000, "<%a%><%b" * 50_000 + "<%" * 50_000],
    ids=["40KB-open", "400KB-open", "500KB-open-names", "mixed"],
)
def test_unclosed_markers_are_scanned_in_linear_time(text: str) -> None:
    # Linear: half a megabyte in well under a second (the quadratic scan took minutes).
    with at_most():
        found = references(text)
        rendered = render(text, lambda ref: "v")
    closed = text.count("%>")
    assert len(found) == closed
    assert rendered == "v" * closed + text[text.rfind("%>") + 2 :] if closed else text


def test_a_tag_runs_from_its_opening_to_the_first_closing_marker() -> None:
    pieces = ["<%", "%>", "%", "<", ">", "a", " ", "\n", "$x"]
    texts = [a + b + c + d for a in pieces for b in pieces for c in pieces for d in pieces]
    texts += ["<% a <% b %>", "<%>%>", "<%%>", "x <% $parameters.a %> <% $data.uri[0] %> <%"]
    for text in texts:
        assert [r.text[2:-2] for r in references(text)] == old_references(text), text


def test_a_job_full_of_unclosed_markers_parses_fast() -> None:
    text = JOB + "taskRoles:\n  w:\n    dockerImage: img\n    commands: ['" + "<%" * 20_000
    text += "']\n"
    with at_most():
        parsed = parse_job(text)
    assert parsed.warnings == []


# -- large documents within the bounds ---------------------------------------------------


def roles(n: int, extra: str = "") -> str:
    return "".join(
        f"  r{i}:\n    dockerImage: img\n    commands: ['echo <% $parameters.p %>']\n{extra}"
        for i in range(n)
    )


def plugin(params: str) -> str:
    return (
        "extras:\n  com.microsoft.pai.runtimeplugin:\n    - plugin: ssh\n"
        f"      parameters: {{{params}}}\n"
    )


def many_roles_one_plugin_of_many_markers() -> str:
    params = ", ".join(f"k{j}: '<% $parameters.p{j} %>'" for j in range(4000))
    return JOB + "taskRoles:\n" + roles(1000) + plugin(params)


def many_roles_one_long_plugin_text() -> str:
    line = "".join(f"<%$data.a{i}%>" for i in range(50_000))
    return JOB + "taskRoles:\n" + roles(2000) + plugin(f"k: '{line}'")


def many_roles_many_data_prerequisites() -> str:
    pre = "".join(f"  - {{name: d{j}, type: data, uri: x}}\n" for j in range(1200))
    return JOB + pre + "taskRoles:\n" + roles(1200, "    data: d1199\n")


def many_distinct_unresolved_markers() -> str:
    line = "".join(f"<%a{i}%>" for i in range(100_000))
    return JOB + f"taskRoles:\n  w:\n    dockerImage: img\n    commands: ['{line}']\n"


def many_lines_each_unresolved() -> str:
    lines = "".join(f"      - 'echo <% $parameters.x{i} %>'\n" for i in range(15_000))
    return JOB + "taskRoles:\n  w:\n    dockerImage: img\n    commands:\n" + lines


def many_invalid_roles() -> str:
    return JOB + "taskRoles:\n" + "".join(f"  r{i}: {{instances: -1}}\n" for i in range(3000))


def v1_job_of_many_invalid_roles() -> str:
    roles = [{"name": f"r{i}", "taskNumber": 0, "command": "x"} for i in range(2000)]
    return json.dumps({"jobName": "x", "image": "python", "taskRoles": roles})


LARGE: dict[str, Callable[[], str]] = {
    "roles x plugin markers": many_roles_one_plugin_of_many_markers,
    "roles x long plugin text": many_roles_one_long_plugin_text,
    "roles x prerequisites": many_roles_many_data_prerequisites,
    "distinct markers": many_distinct_unresolved_markers,
    "unresolved lines": many_lines_each_unresolved,
    "invalid roles": many_invalid_roles,
    "v1 invalid roles": v1_job_of_many_invalid_roles,
}


@pytest.mark.parametrize("make", LARGE.values(), ids=LARGE.keys())
def test_large_documents_within_the_bounds_parse_fast_and_list_at_most_a_hundred(
    make: Callable[[], str],
) -> None:
    text = make()
    assert len(text) <= 1024 * 1024
    with at_most(LARGE_SECONDS):
        try:
            listed = parse_job(text).warnings
        except SpecError as exc:
            listed = exc.errors
    assert len(listed) <= MAX_REPORTED + 1


def test_past_a_hundred_errors_the_rest_are_counted_not_listed() -> None:
    with pytest.raises(SpecError) as info:
        parse_job(many_invalid_roles())
    errors = info.value.errors
    assert len(errors) == MAX_REPORTED + 1
    assert errors[-1] == FieldError("", f"{6000 - MAX_REPORTED} more not listed")
    assert info.value.message.endswith("(and 5999 more)")


def test_markers_past_the_check_budget_are_said_to_be_unchecked() -> None:
    # Every marker resolves: 600 roles x 3,000 plugin markers, no warning but the budget's.
    defined = ", ".join(f"p{j}: {j}" for j in range(3000))
    params = ", ".join(f"k{j}: '<% $parameters.p{j} %>'" for j in range(3000))
    text = JOB + f"parameters: {{p: 1, {defined}}}\ntaskRoles:\n" + roles(600) + plugin(params)
    with at_most():
        warnings = parse_job(text).warnings
    assert warnings == [
        FieldError("", f"more than {MAX_MARKER_CHECKS} markers to check; the rest were not")
    ]
