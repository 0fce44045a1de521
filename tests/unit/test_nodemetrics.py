"""Matching Prometheus series to nodes for the hardware view (pure), and this machine's
measured use on the local backend."""

from __future__ import annotations

import time

from jupyter_pai.backends.kubernetes.nodemetrics import (
    NO_SERIES,
    NodeSnapshot,
    attach,
    series_keys,
)
from jupyter_pai.backends.local.hostusage import HostUsage
from jupyter_pai.backends.models import NodeResources


def test_a_series_names_its_node_by_its_most_specific_label() -> None:
    assert series_keys({"node": "n1", "Hostname": "h", "instance": "10.0.0.9:9100"}) == ["n1"]
    assert series_keys({"kubernetes_node": "n2", "instance": "x:1"}) == ["n2"]
    assert series_keys({"Hostname": "gpu-3", "instance": "10.0.0.1:9400"}) == ["gpu-3"]
    assert series_keys({"instance": "10.0.0.7:9100"}) == ["10.0.0.7"]
    assert series_keys({"instance": "[fd00::7]:9100"}) == ["fd00::7"]
    assert series_keys({"instance": "node-a"}) == ["node-a"]
    assert series_keys({"job": "x"}) == []


def node(name: str, *addresses: str) -> dict[str, object]:
    return {
        "metadata": {"name": name},
        "status": {"addresses": [{"type": "InternalIP", "address": a} for a in addresses]},
    }


def test_figures_go_to_the_node_by_name_or_address() -> None:
    objects = [node("a", "10.0.0.1"), node("b", "10.0.0.2"), node("c", "10.0.0.3")]
    resources = [NodeResources(name=n) for n in "abc"]
    snap = NodeSnapshot(
        series={
            "cpu": [(["a"], 12.345), (["10.0.0.2"], 80.0)],
            "memory": [(["a"], 40.0), (["10.0.0.2"], 55.55)],
            "gpu": [(["b"], 61.0), (["elsewhere"], 5.0)],
        }
    )
    attach(resources, objects, snap)
    got = [
        (n.name, n.cpu_percent, n.memory_percent, n.gpu_percent, n.utilisation_note)
        for n in resources
    ]
    assert got == [
        ("a", 12.3, 40.0, None, None),
        ("b", 80.0, 55.5, 61.0, None),
        ("c", None, None, None, NO_SERIES),
    ]


def test_an_unanswered_snapshot_leaves_only_its_note() -> None:
    resources = [NodeResources(name="a")]
    attach(resources, [node("a")], NodeSnapshot(note="Prometheus at x did not answer: refused"))
    assert resources[0].cpu_percent is None
    assert resources[0].utilisation_note == "Prometheus at x did not answer: refused"


def test_this_machines_cpu_use_needs_a_span_and_memory_is_at_once() -> None:
    usage = HostUsage()
    cpu, memory = usage.percentages()
    assert cpu is None and 0 < memory < 100  # a few milliseconds of counters say nothing
    deadline = time.monotonic() + 1.2
    while time.monotonic() < deadline:  # a busy second: this process alone uses a core
        pass
    cpu, _ = usage.percentages()
    assert cpu is not None and cpu > 0
    assert usage.percentages()[0] == cpu  # asked again at once: the same figure
