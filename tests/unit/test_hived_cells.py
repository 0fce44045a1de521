"""HiveD's VC status (the shape its web server answers, seen on the test cluster) as VC
rows: leaf cells counted per VC, those not ``Free`` as used, unhealthy ones noted."""

from __future__ import annotations

from typing import Any

from jupyter_pai.backends.kubernetes.flavors.hived_cells import VcCells, vc_cells, virtual_clusters
from jupyter_pai.backends.models import JobState, JobSummary, Resources


def leaf(address: str, state: str = "Free", health: str = "Healthy") -> dict[str, Any]:
    return {
        "cellType": "DT",
        "cellAddress": address,
        "cellState": state,
        "cellHealthiness": health,
        "cellPriority": -2,
    }


def node(address: str, leaves: list[dict[str, Any]], cell_type: str = "DT-NODE") -> dict[str, Any]:
    return {
        "leafCellType": "DT",
        "cellType": cell_type,
        "isNodeLevel": True,
        "cellAddress": address,
        "cellState": "Used" if any(c["cellState"] != "Free" for c in leaves) else "Free",
        "cellHealthiness": "Healthy",
        "cellPriority": -2,
        "cellChildren": leaves,
    }


STATUS = {
    "default": [
        node(
            "default/0",
            [leaf("default/0/0", "Used"), leaf("default/0/1", "Reserving")]
            + [leaf(f"default/0/{i}") for i in range(2, 8)],
        ),
        node(
            "default/1",
            [leaf("default/1/0", health="Bad")] + [leaf(f"default/1/{i}") for i in range(1, 4)],
            "DT-RUNNER-NODE",
        ),
    ],
    "research": [node("research/0", [leaf(f"research/0/{i}") for i in range(8)])],
    "empty": [],
}


def test_leaf_cells_are_counted_per_vc() -> None:
    assert vc_cells(STATUS) == {
        "default": VcCells("default", ("DT",), total=12, used=2, bad=1, by_type=(("DT", 12, 2),)),
        "research": VcCells("research", ("DT",), total=8, used=0, bad=0, by_type=(("DT", 8, 0),)),
        "empty": VcCells("empty", (), total=0, used=0, bad=0),
    }


def test_vc_rows_take_gpus_from_the_cells_and_the_rest_from_the_cluster() -> None:
    job = JobSummary.model_construct(virtual_cluster="default", state=JobState.RUNNING)
    rows = virtual_clusters(vc_cells(STATUS), [job], Resources(gpu=36, cpu=40, memory_mb=4096))
    assert [
        (
            v.name,
            v.capacity.gpu,
            v.capacity.cpu,
            v.used.gpu,
            v.free.gpu,
            v.running_jobs,
            v.description,
        )
        for v in rows
    ] == [
        ("default", 12, 40, 2, 10, 1, "HiveD virtual cluster: 12 DT cells, 1 unhealthy"),
        ("empty", 0, 40, 0, 0, 0, "HiveD virtual cluster with no cells"),
        ("research", 8, 40, 0, 8, 0, "HiveD virtual cluster: 8 DT cells"),
    ]
