"""HiveD (OpenPAI's scheduler extender) in the test control plane: its configuration built
from the cluster's GPU nodes in the shape of OpenPAI's manual (a SKU, node-level cells,
a pool; virtual clusters `default` and `research`), the `hivedscheduler` process, and a
second kube-scheduler whose only profile (`schedulerName: hivedscheduler`) uses HiveD as
its extender (filter, bind, preempt). The binary comes from `prebuilt.ensure(HIVED)`."""

from __future__ import annotations

import urllib.request
from pathlib import Path
from typing import Any

import yaml

from . import manifests

Manifest = dict[str, Any]

SCHEDULER_NAME = "hivedscheduler"
SKU = "DT"
NODE_CELL = "DT-NODE"
POOL_CELL = "DT-NODE-POOL"
RUNNER_CELL = "DT-RUNNER-NODE"
#: The CPU SKU (one CPU per cell) for tasks without GPUs (KubernetesBackend.hived_cpu_sku).
CPU_SKU = "CPU"
#: Each runner node's CPUs, halved between the two VCs: HiveD lets one node be the address
#: of cells of several types, so the GPU cell and these CPU cells share the runner node.
CPU_CELLS = {"default": "CPU-RUNNER-DEFAULT", "research": "CPU-RUNNER-RESEARCH"}
CPU_NODE_CELL = "CPU-NODE"
CPU_POOL_CELL = "CPU-NODE-POOL"
ENABLE_RESOURCE = "hivedscheduler.microsoft.com/pod-scheduling-enable"
# jupyter-pai's hived pods name `pai-<extras.hivedScheduler.jobPriorityClass>`.
PRIORITY_CLASSES = {"crit": 120, "prod": 100, "test": 10, "oppo": -1}


def config(
    kubeconfig: Path,
    port: int,
    gpu_pool: manifests.NodeShape | None,
    runner_pool: manifests.NodeShape | None,
) -> Manifest:
    """`hivedscheduler.yaml`: SKU `DT` (a GPU) and `CPU` (a CPU); each simulated GPU node a
    node-level cell of its GPUs, all of them one pool, and a cell of its CPUs, all of them a
    second pool; each runner node a node-level cell of its own GPUs, and two cells of half
    its CPUs each. VC `research` gets one GPU node (8 GPUs: its cap elsewhere), one node's
    CPUs and one half of the runner's CPUs; `default` the rest."""
    cell_types: Manifest = {}
    physical: list[Manifest] = []
    default: list[Manifest] = []
    research: list[Manifest] = []
    if gpu_pool is not None and gpu_pool.count:
        cell_types[NODE_CELL] = {
            "childCellType": SKU,
            "childCellNumber": gpu_pool.gpus,
            "isNodeLevel": True,
        }
        cell_types[POOL_CELL] = {"childCellType": NODE_CELL, "childCellNumber": gpu_pool.count}
        physical.append(
            {
                "cellType": POOL_CELL,
                "cellChildren": [{"cellAddress": n} for n in gpu_pool.names()],
            }
        )
        # The same nodes' CPUs as a second pool of CPU cells, shared out the same way.
        cell_types[CPU_NODE_CELL] = {
            "childCellType": CPU_SKU,
            "childCellNumber": int(float(gpu_pool.cpu)),
            "isNodeLevel": True,
        }
        cell_types[CPU_POOL_CELL] = {
            "childCellType": CPU_NODE_CELL,
            "childCellNumber": gpu_pool.count,
        }
        physical.append(
            {
                "cellType": CPU_POOL_CELL,
                "cellChildren": [{"cellAddress": n} for n in gpu_pool.names()],
            }
        )
        share = 1 if gpu_pool.count > 1 else 0
        for nodes in (f"{POOL_CELL}.{NODE_CELL}", f"{CPU_POOL_CELL}.{CPU_NODE_CELL}"):
            if share:
                research.append({"cellType": nodes, "cellNumber": share})
            default.append({"cellType": nodes, "cellNumber": gpu_pool.count - share})
    if runner_pool is not None and runner_pool.count:
        cell_types[RUNNER_CELL] = {
            "childCellType": SKU,
            "childCellNumber": runner_pool.gpus,
            "isNodeLevel": True,
        }
        physical += [{"cellType": RUNNER_CELL, "cellAddress": n} for n in runner_pool.names()]
        default.append({"cellType": RUNNER_CELL, "cellNumber": runner_pool.count})
        half = int(float(runner_pool.cpu)) // 2
        for vc, cell_type in CPU_CELLS.items():
            cell_types[cell_type] = {
                "childCellType": CPU_SKU,
                "childCellNumber": half,
                "isNodeLevel": True,
            }
            physical += [{"cellType": cell_type, "cellAddress": n} for n in runner_pool.names()]
            (default if vc == "default" else research).append(
                {"cellType": cell_type, "cellNumber": runner_pool.count}
            )
    vcs = {"default": {"virtualCells": default}}
    if research:
        vcs["research"] = {"virtualCells": research}
    return {
        "kubeConfigFilePath": str(kubeconfig),
        "webServerAddress": f"127.0.0.1:{port}",
        "waitingPodSchedulingBlockMilliSec": 50,
        "physicalCluster": {
            "skuTypes": {
                SKU: {"gpu": 1, "cpu": 4, "memory": "32Gi"},
                CPU_SKU: {"gpu": 0, "cpu": 1, "memory": "4Gi"},
            },
            "cellTypes": cell_types,
            "physicalCells": physical,
        },
        "virtualClusters": vcs,
    }


def scheduler_config(kubeconfig: Path, hived_port: int) -> Manifest:
    """The second kube-scheduler's `KubeSchedulerConfiguration` (upstream's deploy.yaml
    as a v1 config instead of the removed Policy file)."""
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "clientConnection": {"kubeconfig": str(kubeconfig)},
        "leaderElection": {"leaderElect": False},
        "profiles": [{"schedulerName": SCHEDULER_NAME}],
        "extenders": [
            {
                "urlPrefix": f"http://127.0.0.1:{hived_port}/v1/extender",
                "filterVerb": "filter",
                "preemptVerb": "preempt",
                "bindVerb": "bind",
                "enableHTTPS": False,
                "httpTimeout": "5s",
                "nodeCacheCapable": True,
                "ignorable": False,
                "managedResources": [{"name": ENABLE_RESOURCE, "ignoredByScheduler": True}],
            }
        ],
    }


def priority_classes() -> list[Manifest]:
    return [
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": f"pai-{name}"},
            "value": value,
            "preemptionPolicy": "Never",
            "description": f"OpenPAI job priority {name} (HiveD's pods)",
        }
        for name, value in PRIORITY_CLASSES.items()
    ]


def write(path: Path, document: Manifest) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


def hived_argv(binary: Path) -> list[str]:
    # It reads ./hivedscheduler.yaml: started with its folder as the working directory.
    return [str(binary)]


def scheduler_argv(kube_scheduler: Path, config: Path, port: int, cert_dir: Path) -> list[str]:
    return [
        str(kube_scheduler),
        f"--config={config}",
        "--bind-address=127.0.0.1",
        f"--secure-port={port}",
        f"--cert-dir={cert_dir}",
    ]


def vcs_served(port: int) -> bool:
    url = f"http://127.0.0.1:{port}/v1/inspect/clusterstatus/virtualclusters/"
    with urllib.request.urlopen(url, timeout=5) as response:
        return bool(response.status == 200)


def web_url(directory: Path) -> str | None:
    """HiveD's web server of the cluster in ``directory``, from the configuration written
    there; None where HiveD is left out."""
    config = directory / "hived" / "hivedscheduler.yaml"
    if not config.exists():
        return None
    return f"http://{yaml.safe_load(config.read_text())['webServerAddress']}"
