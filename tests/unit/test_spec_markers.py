"""Markers rendered as OpenPAI renders them: any field of a role's prerequisite, ``[N]`` list
indexes, callbacks rendered for the role that runs them, unresolved markers left as written
(with a warning), and prerequisite names unique per type. Golden: markers.json."""

from __future__ import annotations

from jupyter_pai.errors import SpecError
from jupyter_pai.spec import parse_job, task_commands
from jupyter_pai.spec.render import render_for_role
from tests.spec_corpus import golden, normalized

JOB = """
protocolVersion: 2
name: markers
type: job
prerequisites:
  - {name: img, type: dockerimage, uri: 'python:3.11'}
  # the same name as the image: names are unique per type
  - {name: img, type: script, uri: 'https://example.org/train.git', version: 1.4, protocolVersion: 2}
  - name: mnist
    type: data
    uri: [/data/mnist/train, /data/mnist/test]
    plugin: com.microsoft.pai.runtimeplugin.cmd
    callbacks:
      - event: taskStarts
        commands: ['ls <% $data.uri[0] %> <% $data.uri.1 %> for <% $parameters.model %>']
  - {name: cifar, type: data, uri: [/data/cifar]}
  - {name: out, type: output, uri: /out, bucket: models}
parameters: {model: resnet, lr: 0.1, sizes: [1, 2], deep: {a: {b: yes}}}
secrets: {token: s3cr3t-token}
taskRoles:
  a:
    dockerImage: img
    script: img
    data: mnist
    output: out
    prerequisites: [mnist]
    commands:
      - echo <% $script.version %> <% $script.uri %> <% $script.protocolVersion %>
      - echo <% $data.uri[1] %> <% $data.uri %> <% $output.bucket %>
      - echo <%$parameters.sizes[0]%> <% $parameters.sizes %> <% $parameters.deep.a.b %>
      - echo <% $secrets.token %> <% $parameters.missing %> <% $output.nothing %> <% $foo %>
  b:
    data: cifar
    prerequisites: [mnist]
    commands: ['echo <% $data.uri[0] %> <% $script.uri %>']
deployments:
  - {name: d, version: 2, protocolVersion: 2, taskRoles: {b: {preCommands: ['echo <% $parameters.lr %>']}}}
defaults: {deployment: d}
extras:
  com.microsoft.pai.runtimeplugin:
    - plugin: cmd
      taskroles: [b]
      parameters: {preCommands: ['echo <% $data.name %> <% $secrets.token %> <% $secrets.none %>']}
"""


def test_markers_golden() -> None:
    parsed = parse_job(JOB)
    job = parsed.job
    mnist = job.prerequisite("mnist", "data")
    assert mnist is not None
    data = {
        "commands": {role: task_commands(job, role) for role in job.role_names},
        "commands_without_secrets": {
            role: task_commands(job, role, secrets=False) for role in job.role_names
        },
        # The same prerequisite callback rendered for each role that lists it: $data is
        # that role's data prerequisite (mnist for a, cifar for b), as OpenPAI's runtime does.
        "callbacks": {
            role: render_for_role(job, role, mnist.as_written()["callbacks"])
            for role in job.role_names
        },
        "plugin_b": render_for_role(job, "b", job.extras.runtime_plugins[0].parameters),
        "plugin_b_without_secrets": render_for_role(
            job, "b", job.extras.runtime_plugins[0].parameters, secrets=False
        ),
        "warnings": [str(w) for w in parsed.warnings],
    }
    assert normalized(data) == golden("markers.json", data)


def test_field_lookup_index_and_left_as_is() -> None:
    job = parse_job(JOB).job
    a = task_commands(job, "a")
    assert a[0] == "echo 1.4 https://example.org/train.git 2"
    assert a[1] == "echo /data/mnist/test /data/mnist/train,/data/mnist/test models"
    assert a[2] == "echo 1 1,2 true"
    assert a[3] == ("echo s3cr3t-token <% $parameters.missing %> <% $output.nothing %> <% $foo %>")
    # Without secrets the declared one stays a marker for the backend to fill at run time.
    assert task_commands(job, "a", secrets=False)[3].startswith("echo <% $secrets.token %> ")


def test_protocol_fields_raise_no_unknown_field_warning() -> None:
    warnings = [w.path for w in parse_job(JOB).warnings]
    assert not [p for p in warnings if "protocolVersion" in p or p.endswith(".version")]
    assert not [p for p in warnings if p.startswith("prerequisites.4")]  # bucket: plugin-specific


def test_same_type_same_name_is_still_an_error() -> None:
    text = JOB.replace("- {name: cifar, type: data", "- {name: mnist, type: data")
    try:
        parse_job(text)
    except SpecError as exc:
        assert "prerequisites.3.name: duplicate data prerequisite name 'mnist'" in [
            str(e) for e in exc.errors
        ]
    else:
        raise AssertionError("two data prerequisites named mnist were accepted")
