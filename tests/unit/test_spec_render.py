"""task_commands, public_spec, secret_values and redact, with golden outputs per example."""

from __future__ import annotations

import json

import pytest

from jupyter_pai.spec import parse_job, public_spec, redact, secret_values, task_commands
from jupyter_pai.spec.hidden import HIDDEN
from tests.spec_corpus import example_files, golden, normalized

EXAMPLES = example_files()


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_public_spec_golden(path) -> None:  # type: ignore[no-untyped-def]
    job = parse_job(path.read_text()).job
    doc = public_spec(job)
    assert normalized(doc) == golden(f"{path.stem}.public.json", doc)
    # The public spec is itself a valid job that parses to the same roles.
    again = parse_job(doc).job
    assert again.role_names == job.role_names


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_rendered_commands_golden(path) -> None:  # type: ignore[no-untyped-def]
    job = parse_job(path.read_text()).job
    rendered = {role: task_commands(job, role, secrets=False) for role in job.role_names}
    assert normalized(rendered) == golden(f"{path.stem}.commands.json", rendered)
    for lines in rendered.values():
        assert not any("<% $parameters" in line for line in lines)


def test_secrets_never_appear_in_public_spec() -> None:
    text = """
protocolVersion: 2
name: secretive
type: job
prerequisites:
  - name: img
    type: dockerimage
    uri: registry.example.com/team/img:1
    auth: {username: bot, password: registry-pa55, registryuri: registry.example.com}
parameters: {note: "token is tok-123456 (oops)"}
secrets:
  hf_token: tok-123456
  nested: {aws: {key: AKIAEXAMPLE}}
  short: ab
taskRoles:
  worker:
    dockerImage: img
    commands:
      - huggingface-cli login --token <% $secrets.hf_token %>
      - echo <% $secrets.nested.aws.key %> <% $secrets.short %>
"""
    job = parse_job(text).job
    doc = public_spec(job)
    dumped = json.dumps(doc)
    for value in ("tok-123456", "AKIAEXAMPLE", "registry-pa55"):
        assert value not in dumped
    assert doc["secrets"] == {"hf_token": HIDDEN, "nested": HIDDEN, "short": HIDDEN}
    assert doc["prerequisites"][0]["auth"] == {
        "username": "bot",
        "password": HIDDEN,
        "registryuri": "registry.example.com",
    }
    assert doc["parameters"]["note"] == f"token is {HIDDEN} (oops)"
    # Commands keep their markers, never the values.
    assert doc["taskRoles"]["worker"]["commands"][0].endswith("<% $secrets.hf_token %>")
    assert secret_values(job) == ["registry-pa55", "AKIAEXAMPLE", "tok-123456", "ab"]
    # The model itself still holds the values for the backend.
    assert task_commands(job, "worker") == [
        "huggingface-cli login --token tok-123456",
        "echo AKIAEXAMPLE ab",
    ]
    assert task_commands(job, "worker", secrets=False)[1] == (
        "echo <% $secrets.nested.aws.key %> <% $secrets.short %>"
    )


def test_redact() -> None:
    assert redact("a tok-1 b tok-12", ["tok-12", "tok-1"]) == f"a {HIDDEN} b {HIDDEN}"
    assert redact("nothing", []) == "nothing"
    assert redact("x", [""]) == "x"


def test_deployment_commands_wrap_role_commands() -> None:
    path = next(p for p in EXAMPLES if p.name == "cpu-only.yaml")
    job = parse_job(path.read_text()).job
    lines = task_commands(job, "shard")
    assert lines[0].startswith('echo "[pre]') and lines[-1].startswith('echo "[post]')
    assert "records = 1000" in lines[1]


def test_parameter_values_render_as_text() -> None:
    text = """
protocolVersion: 2
name: p
type: job
parameters: {flag: true, n: 3, f: 0.5, cfg: {a: [1, 2]}, nested: {lr: 0.1}, empty: null}
taskRoles:
  w:
    commands:
      - >-
        run <% $parameters.flag %> <% $parameters.n %> <% $parameters.f %>
        '<% $parameters.cfg %>' <% $parameters.nested.lr %> [<% $parameters.empty %>]
"""
    job = parse_job(text).job
    # A mapping and null resolve to nothing: OpenPAI writes such a marker back as it is.
    assert task_commands(job, "w") == [
        "run true 3 0.5 '<% $parameters.cfg %>' 0.1 [<% $parameters.empty %>]"
    ]


def test_parameter_override_changes_rendered_commands() -> None:
    path = next(p for p in EXAMPLES if p.name == "tensorflow-ps-worker.yaml")
    job = parse_job(path.read_text(), parameters={"model": "vgg16"}).job
    assert "--model=vgg16" in task_commands(job, "worker")[1]


def test_prerequisite_markers() -> None:
    text = """
protocolVersion: 2
name: p
type: job
prerequisites:
  - {name: ds, type: data, uri: [nfs://a, nfs://b]}
  - {name: code, type: script, uri: 'https://github.com/x/y.git'}
  - {name: out, type: output, uri: /out}
taskRoles:
  w:
    data: ds
    script: code
    output: out
    commands: ["fetch <% $data.uri %> / <% $script.uri %> -> <% $output.uri %> (<% $data.name %>)"]
"""
    job = parse_job(text).job
    assert (
        task_commands(job, "w")
        == [
            "fetch nfs://a,nfs://b / https://github.com/x/y.git -> /out (ds)"  # joined as JavaScript joins a list
        ]
    )
