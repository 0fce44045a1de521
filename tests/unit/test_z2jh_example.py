"""examples/jupyterhub/z2jh-values.yaml: its hub.extraConfig runs as zero-to-jupyterhub
runs it (with the hub's traitlets config as ``c``) and configures KubeSpawner as the
admin guide says; its singleuser values agree with what the helper sets."""

from __future__ import annotations

from pathlib import Path

import yaml
from traitlets.config import Config

from jupyter_pai.hub import objects

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "jupyterhub" / "z2jh-values.yaml"


def test_the_example_configures_kubespawner() -> None:
    values = yaml.safe_load(EXAMPLE.read_text())
    c = Config()
    for name, snippet in values["hub"]["extraConfig"].items():
        exec(compile(snippet, f"{EXAMPLE.name}:hub.extraConfig.{name}", "exec"), {"c": c})
    spawner = c.KubeSpawner
    assert spawner.enable_user_namespaces is True
    assert spawner.user_namespace_template == "pai-{username}"
    assert spawner.service_account == objects.SERVICE_ACCOUNT
    assert callable(spawner.pre_spawn_hook) and callable(spawner.modify_pod_hook)
    assert values["singleuser"]["serviceAccountName"] == objects.SERVICE_ACCOUNT
    assert values["hub"]["serviceAccount"]["name"] == "hub"  # the chart's default subject
