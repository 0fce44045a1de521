"""kwok's configuration: Stages that drive simulated pods on the GPU nodes.

Pods there start Running at once and stay Running until deleted, unless they carry
`RUN_FOR` (a Go duration): then they finish that long after starting, Succeeded or,
with a non-zero `EXIT_CODE`, Failed. A deleted pod that a finalizer holds ends Failed
(exit 143, as stopped by SIGTERM) before it is removed, as a kubelet writes a final phase
first: the Job controller lets such a pod go only once it has ended. The runner nodes
have a kwok of their own with node Stages only: the pod runner owns their pods. Node
Stages are kwok's own, copied from its module.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

RUN_FOR = "jupyter-pai.test/run-for"
EXIT_CODE = "jupyter-pai.test/exit-code"

_POD = {"apiGroup": "v1", "kind": "Pod"}
LIVE_PHASES = ["Pending", "Running", "Unknown"]
ENDED_PHASES = ["Succeeded", "Failed"]

_RUNNING_TEMPLATE = """\
{{ $now := Now }}
conditions:
- lastTransitionTime: {{ $now | Quote }}
  status: "True"
  type: Initialized
- lastTransitionTime: {{ $now | Quote }}
  status: "True"
  type: Ready
- lastTransitionTime: {{ $now | Quote }}
  status: "True"
  type: ContainersReady
- lastTransitionTime: {{ $now | Quote }}
  status: "True"
  type: PodScheduled
containerStatuses:
{{ range .spec.containers }}
- image: {{ .image | Quote }}
  name: {{ .name | Quote }}
  ready: true
  started: true
  restartCount: 0
  state:
    running:
      startedAt: {{ $now | Quote }}
{{ end }}
{{ $hostIPs := NodeIPsWith .spec.nodeName }}
{{ with $hostIPs }}
hostIP: {{ index . 0 | Quote }}
hostIPs:
{{ range . }}
- ip: {{ . | Quote }}
{{ end }}
{{ end }}
{{ $podIPs := PodIPsWith .spec.nodeName ( or .spec.hostNetwork false ) ( or .metadata.uid "" ) \
( or .metadata.name "" ) ( or .metadata.namespace "" ) }}
{{ with $podIPs }}
podIP: {{ index . 0 | Quote }}
podIPs:
{{ range . }}
- ip: {{ . | Quote }}
{{ end }}
{{ end }}
phase: Running
startTime: {{ $now | Quote }}
"""

_FINISHED_TEMPLATE = """\
{{ $now := Now }}
{{ $code := or (index .metadata.annotations "EXIT_ANNOTATION") "0" }}
conditions:
- lastTransitionTime: {{ $now | Quote }}
  status: "False"
  type: Ready
  reason: PodCompleted
- lastTransitionTime: {{ $now | Quote }}
  status: "False"
  type: ContainersReady
  reason: PodCompleted
containerStatuses:
{{ range .spec.containers }}
- image: {{ .image | Quote }}
  name: {{ .name | Quote }}
  ready: false
  started: false
  restartCount: 0
  state:
    terminated:
      exitCode: {{ $code }}
      finishedAt: {{ $now | Quote }}
      reason: {{ if eq $code "0" }}Completed{{ else }}Error{{ end }}
      startedAt: {{ $now | Quote }}
{{ end }}
phase: {{ if eq $code "0" }}Succeeded{{ else }}Failed{{ end }}
""".replace("EXIT_ANNOTATION", EXIT_CODE)


# A deleted pod's containers stopped by SIGTERM, as a kubelet reports them before the pod
# goes: its final phase is what lets the Job controller take off its tracking finalizer.
_STOPPED_TEMPLATE = """\
{{ $now := Now }}
containerStatuses:
{{ range .spec.containers }}
- image: {{ .image | Quote }}
  name: {{ .name | Quote }}
  ready: false
  started: false
  restartCount: 0
  state:
    terminated:
      exitCode: 143
      finishedAt: {{ $now | Quote }}
      reason: Error
      startedAt: {{ $now | Quote }}
{{ end }}
phase: Failed
"""


def _pod_stage(
    name: str, match: list[dict[str, Any]], then: dict[str, Any], **spec: Any
) -> dict[str, Any]:
    """A kwok Stage over pods: ``then`` for each pod that every expression of ``match``
    selects (``spec``: more of the Stage's spec, such as its delay)."""
    return {
        "apiVersion": "kwok.x-k8s.io/v1alpha1",
        "kind": "Stage",
        "metadata": {"name": name},
        "spec": {
            "resourceRef": _POD,
            "selector": {"matchExpressions": match},
            **spec,
            "next": then,
        },
    }


def pod_stages() -> list[dict[str, Any]]:
    alive = {"key": ".metadata.deletionTimestamp", "operator": "DoesNotExist"}
    deleted = {"key": ".metadata.deletionTimestamp", "operator": "Exists"}
    run_for = f'.metadata.annotations["{RUN_FOR}"]'
    started = {
        "type": "Normal",
        "reason": "Started",
        "message": "Started container (simulated by kwok)",
    }
    return [
        _pod_stage(
            "pod-ready",
            [alive, {"key": ".status.podIP", "operator": "DoesNotExist"}],
            {"event": started, "statusTemplate": _RUNNING_TEMPLATE},
        ),
        _pod_stage(
            "pod-finish",
            [
                alive,
                {"key": ".status.phase", "operator": "In", "values": ["Running"]},
                {"key": run_for, "operator": "Exists"},
            ],
            {"statusTemplate": _FINISHED_TEMPLATE},
            delay={"durationMilliseconds": 0, "durationFrom": {"expressionFrom": run_for}},
        ),
        _pod_stage(
            "pod-stop",
            [
                deleted,
                {"key": ".metadata.finalizers", "operator": "Exists"},
                {"key": ".status.phase", "operator": "In", "values": LIVE_PHASES},
            ],
            {"statusTemplate": _STOPPED_TEMPLATE},
        ),
        _pod_stage(
            "pod-delete",
            [deleted, {"key": ".metadata.finalizers", "operator": "DoesNotExist"}],
            {"delete": True},
        ),
        _pod_stage(
            "pod-delete-ended",
            [deleted, {"key": ".status.phase", "operator": "In", "values": ENDED_PHASES}],
            {"delete": True},
        ),
    ]


def default_logs(empty_log: Path) -> dict[str, Any]:
    """Simulated pods log nothing (an empty file) rather than failing a log request."""
    return {
        "apiVersion": "kwok.x-k8s.io/v1alpha1",
        "kind": "ClusterLogs",
        "metadata": {"name": "simulated-pods"},
        "spec": {"logs": [{"logsFile": str(empty_log), "follow": True}]},
    }


def write_gpu_config(path: Path, node_stage_files: list[Path], empty_log: Path) -> None:
    """kwok for the simulated GPU nodes: node and pod Stages, empty logs."""
    empty_log.touch()
    _write(path, [default_logs(empty_log), *_load(node_stage_files), *pod_stages()])


def write_runner_config(path: Path, node_stage_files: list[Path]) -> None:
    """kwok for the runner nodes: node Stages only, the pod runner owns their pods."""
    _write(path, _load(node_stage_files))


def _load(files: list[Path]) -> list[Any]:
    return [doc for f in files for doc in yaml.safe_load_all(f.read_text()) if doc]


def _write(path: Path, documents: list[Any]) -> None:
    path.write_text(yaml.safe_dump_all(documents, sort_keys=False))
