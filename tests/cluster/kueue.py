"""Kueue and JobSet in the test control plane: their CRDs (Kueue's conversion webhooks
and every admission webhook registered by URL, with our CA), the managers' configuration
files (internal certificate management off, our certificate in `certDir`, no leader
election, no metrics or visibility servers, which would want certificates from fixed
paths) and command lines, and the virtual clusters as Kueue objects. The binaries and
deployment files come from `prebuilt.ensure(prebuilt.KUEUE / JOBSET)`."""

from __future__ import annotations

import base64
import copy
import shutil
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from . import kube, manifests, pki, processes

Manifest = dict[str, Any]

KUEUE_NAMESPACE = "kueue-system"
JOBSET_NAMESPACE = "jobset-system"
QUEUE_API = "kueue.x-k8s.io/v1beta2"
# The one ResourceFlavor: no node labels, because pods of a VC land on the simulated GPU
# nodes or on the runner node (both hold GPUs) as the job's own node selector says.
FLAVOR = "gpu"
# Only the GPUs are a VC's quota (as Volcano's queues cap only GPUs): Kueue ignores
# these resources, so a ClusterQueue need not cover them.
EXCLUDED_RESOURCES = ["cpu", "memory", "ephemeral-storage", "pods"]
# `default` is uncapped in the other flavors; a ClusterQueue needs a number.
UNCAPPED_GPUS = 10_000

# Kueue's webhooks for its own kinds and for the one integration it manages (JobSet);
# the rest (pods, batch Jobs, deployments, …) would stand in the way of other flavors'
# objects whenever kueue-manager is down.
KUEUE_WEBHOOKS = (
    "mclusterqueue.kb.io",
    "mresourceflavor.kb.io",
    "mworkload.kb.io",
    "mjobset.kb.io",
    "vclusterqueue.kb.io",
    "vcohort.kb.io",
    "vresourceflavor.kb.io",
    "vworkload.kb.io",
    "vjobset.kb.io",
)
# Kueue's CRDs served with a conversion webhook (config/crd/kustomization.yaml's patches).
KUEUE_CONVERTED = ("localqueues", "clusterqueues", "cohorts", "workloads", "multikueueclusters")

_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _documents(paths: list[Path]) -> list[Manifest]:
    return [doc for path in paths for doc in yaml.load_all(path.read_text(), _Loader) if doc]


def _ca(ca_pem: bytes) -> str:
    return base64.b64encode(ca_pem).decode()


def kueue_crds(kueue_dir: Path, url: str, ca_pem: bytes) -> list[Manifest]:
    crds = _documents(sorted((kueue_dir / "config" / "crd" / "bases").glob("*.yaml")))
    for crd in crds:
        if crd["spec"]["names"]["plural"] in KUEUE_CONVERTED:
            crd["spec"]["conversion"] = {
                "strategy": "Webhook",
                "webhook": {
                    "clientConfig": {"url": f"{url}/convert", "caBundle": _ca(ca_pem)},
                    "conversionReviewVersions": ["v1"],
                },
            }
    return crds


def jobset_crds(jobset_dir: Path) -> list[Manifest]:
    """One version (v1alpha2): no conversion webhook is ever called."""
    return _documents(sorted((jobset_dir / "config" / "crd" / "bases").glob("*.yaml")))


def _by_url(
    configs: list[Manifest], url: str, ca_pem: bytes, keep: tuple[str, ...] | None, prefix: str
) -> list[Manifest]:
    out = []
    for config in configs:
        config = copy.deepcopy(config)
        hooks = [w for w in config["webhooks"] if keep is None or w["name"] in keep]
        for hook in hooks:
            path = hook["clientConfig"]["service"]["path"]
            hook["clientConfig"] = {"url": url + path, "caBundle": _ca(ca_pem)}
            hook["timeoutSeconds"] = 10
        config["webhooks"] = hooks
        config["metadata"] = {"name": f"{prefix}-{config['metadata']['name']}"}
        out.append(config)
    return out


def _not_system(namespace: str) -> Manifest:
    return {
        "matchExpressions": [
            {
                "key": "kubernetes.io/metadata.name",
                "operator": "NotIn",
                "values": ["kube-system", namespace],
            }
        ]
    }


def kueue_webhooks(kueue_dir: Path, url: str, ca_pem: bytes) -> list[Manifest]:
    configs = _documents([kueue_dir / "config" / "webhook" / "manifests.yaml"])
    out = _by_url(configs, url, ca_pem, KUEUE_WEBHOOKS, "kueue")
    for config in out:  # config/webhook/kustomization.yaml's replacements
        for hook in config["webhooks"]:
            if "jobset" in hook["name"]:
                hook["namespaceSelector"] = _not_system(KUEUE_NAMESPACE)
    return out


def jobset_webhooks(jobset_dir: Path, url: str, ca_pem: bytes) -> list[Manifest]:
    configs = _documents([jobset_dir / "config" / "webhook" / "manifests.yaml"])
    out = _by_url(configs, url, ca_pem, None, "jobset")
    for config in out:  # config/webhook/patches: the pod webhooks see JobSets' pods only
        for hook in config["webhooks"]:
            if hook["name"] in ("mpod.kb.io", "vpod.kb.io"):
                hook["objectSelector"] = {
                    "matchExpressions": [
                        {"key": "jobset.sigs.k8s.io/jobset-name", "operator": "Exists"}
                    ]
                }
    return out


def kueue_config(webhook_port: int, health_port: int, cert_dir: Path) -> Manifest:
    return {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2",
        "kind": "Configuration",
        "namespace": KUEUE_NAMESPACE,
        "health": {"healthProbeBindAddress": f"127.0.0.1:{health_port}"},
        "metrics": {"bindAddress": "0"},
        "webhook": {"port": webhook_port, "host": "127.0.0.1", "certDir": str(cert_dir)},
        "leaderElection": {"leaderElect": False},
        "internalCertManagement": {"enable": False},
        "clientConnection": {"qps": 200, "burst": 400},
        "integrations": {"frameworks": ["jobset.x-k8s.io/jobset"]},
        "resources": {"excludeResourcePrefixes": EXCLUDED_RESOURCES},
        "featureGates": {"VisibilityOnDemand": False},
    }


def jobset_config(webhook_port: int, health_port: int, cert_dir: Path) -> Manifest:
    return {
        "apiVersion": "config.jobset.x-k8s.io/v1alpha1",
        "kind": "Configuration",
        "health": {"healthProbeBindAddress": f"127.0.0.1:{health_port}"},
        "metrics": {"bindAddress": "0"},
        "webhook": {"port": webhook_port, "host": "127.0.0.1", "certDir": str(cert_dir)},
        "leaderElection": {"leaderElect": False},
        "internalCertManagement": {"enable": False},
        "clientConnection": {"qps": 200, "burst": 400},
    }


# With internal certificate management off, kueue-manager reads its metrics server's
# certificate from this fixed path (cmd/kueue/main.go) and exits without it, even with
# the metrics server off.
METRICS_CERT_PATH = "/etc/kueue/metrics/certs"
_CLONE_NEWNS = 0x00020000
_MS_RDONLY, _MS_REC, _MS_PRIVATE = 0x1, 0x4000, 0x40000


def etc_overlay(layer: Path) -> Callable[[], None]:
    """A preexec step: a private mount namespace where `/etc` is a read-only overlay of
    `layer` over the host's `/etc`, so kueue-manager finds `METRICS_CERT_PATH` in
    `layer` while the host's `/etc` stays untouched. Needs root (as the pod runner's
    private mounts do)."""
    options = f"lowerdir={layer}:/etc".encode()

    def enter() -> None:
        import ctypes
        import os

        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        if libc.unshare(_CLONE_NEWNS) != 0:
            raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWNS) for kueue-manager")
        if libc.mount(b"none", b"/", None, _MS_REC | _MS_PRIVATE, None) != 0:
            raise OSError(ctypes.get_errno(), "mount --make-rprivate /")
        if libc.mount(b"overlay", b"/etc", b"overlay", _MS_RDONLY, options) != 0:
            raise OSError(ctypes.get_errno(), f"overlay {options.decode()} on /etc")
        os.chdir("/")

    return enter


def write_config(path: Path, config: Manifest) -> Path:
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def manager_argv(binary: Path, config: Path, kubeconfig: Path) -> list[str]:
    return [
        str(binary),
        f"--config={config}",
        f"--kubeconfig={kubeconfig}",
        "--zap-log-level=info",
        "--zap-encoder=console",
    ]


# -- virtual clusters ------------------------------------------------------------------


def resource_flavor() -> Manifest:
    return {"apiVersion": QUEUE_API, "kind": "ResourceFlavor", "metadata": {"name": FLAVOR}}


def cluster_queue(
    name: str,
    gpus: int,
    *,
    cohort: str | None = None,
    borrowing_limit: int | None = None,
    lending_limit: int | None = None,
) -> Manifest:
    """A VC: `gpus` nominal GPUs of flavor `gpu`; in a cohort it lends what it does not
    use (up to `lending_limit`), borrows (up to `borrowing_limit`), and takes its own
    back by preempting borrowers (`reclaimWithinCohort`)."""
    quota: Manifest = {"name": manifests.GPU_RESOURCE, "nominalQuota": str(gpus)}
    if borrowing_limit is not None:
        quota["borrowingLimit"] = str(borrowing_limit)
    if lending_limit is not None:
        quota["lendingLimit"] = str(lending_limit)
    spec: Manifest = {
        "namespaceSelector": {},
        "queueingStrategy": "BestEffortFIFO",
        "resourceGroups": [
            {
                "coveredResources": [manifests.GPU_RESOURCE],
                "flavors": [{"name": FLAVOR, "resources": [quota]}],
            }
        ],
        "preemption": {"reclaimWithinCohort": "Any", "withinClusterQueue": "Never"},
    }
    if cohort:
        spec["cohortName"] = cohort
    return {
        "apiVersion": QUEUE_API,
        "kind": "ClusterQueue",
        "metadata": {"name": name},
        "spec": spec,
    }


def local_queue(name: str, namespace: str, cluster_queue: str | None = None) -> Manifest:
    return {
        "apiVersion": QUEUE_API,
        "kind": "LocalQueue",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"clusterQueue": cluster_queue or name},
    }


def virtual_clusters() -> list[Manifest]:
    """`default` (uncapped) and `research` (8 GPUs, borrowing nothing), as the other
    flavors have them, with a LocalQueue of each in every user namespace."""
    objects = [resource_flavor()]
    for vc, gpus in manifests.VIRTUAL_CLUSTERS.items():
        objects.append(cluster_queue(vc, UNCAPPED_GPUS if gpus is None else gpus))
    for vc in manifests.VIRTUAL_CLUSTERS:
        objects += [local_queue(vc, ns) for ns in manifests.NAMESPACES]
    return objects


# -- starting ----------------------------------------------------------------------------

PORTS = ("kueue-webhook", "kueue-healthz", "jobset-webhook", "jobset-healthz")


def apply_crds(
    api: Any, directory: Path, kueue_dir: Path, jobset_dir: Path, ports: dict[str, int]
) -> list[Manifest]:
    """Both projects' CRDs, right after kube-apiserver is ready (as Volcano's): being
    served takes a moment, which passes while the rest starts."""
    ca_pem = (directory / "pki" / "ca.crt").read_bytes()
    url = f"https://127.0.0.1:{ports['kueue-webhook']}"
    crds = kueue_crds(kueue_dir, url, ca_pem) + jobset_crds(jobset_dir)
    kube.apply(api, crds)
    return crds


def start(
    api: Any,
    directory: Path,
    kueue_dir: Path,
    jobset_dir: Path,
    crds: list[Manifest],
    ports: dict[str, int],
    ca: tuple[Any, Any],
    kubeconfig: Path,
    launch: Callable[..., None],
) -> None:
    """Webhook configurations, then both managers, each serving its webhooks with a
    certificate from our CA (`certDir` holds `tls.crt`/`tls.key`), once the CRDs
    (applied earlier by `apply_crds`, so they become Established meanwhile) are served."""
    ca_pem = (directory / "pki" / "ca.crt").read_bytes()
    kueue_url = f"https://127.0.0.1:{ports['kueue-webhook']}"
    jobset_url = f"https://127.0.0.1:{ports['jobset-webhook']}"
    # The managers' informers need the kinds served.
    processes.wait_until(lambda: kube.crds_established(api, crds), 60, "Kueue/JobSet CRDs")
    kube.apply(api, [manifests.namespace(KUEUE_NAMESPACE), manifests.namespace(JOBSET_NAMESPACE)])
    kube.apply(api, kueue_webhooks(kueue_dir, kueue_url, ca_pem))
    kube.apply(api, jobset_webhooks(jobset_dir, jobset_url, ca_pem))
    for name, binary in (
        ("kueue", kueue_dir / "bin" / "kueue-manager"),
        ("jobset", jobset_dir / "bin" / "jobset-manager"),
    ):
        cert_dir = directory / name / "certs"
        cert_dir.mkdir(parents=True, exist_ok=True)
        cert, key = pki.make_serving_cert(
            directory / "pki", f"{name}-webhook", ca, ["127.0.0.1", "localhost"]
        )
        (cert_dir / "tls.crt").write_bytes(cert.read_bytes())
        (cert_dir / "tls.key").write_bytes(key.read_bytes())
        (cert_dir / "tls.key").chmod(0o600)
        make = kueue_config if name == "kueue" else jobset_config
        config = write_config(
            directory / name / "config.yaml",
            make(ports[f"{name}-webhook"], ports[f"{name}-healthz"], cert_dir),
        )
        if name == "jobset":
            launch(f"{name}-manager", manager_argv(binary, config, kubeconfig))
            continue
        layer = directory / name / "etc"
        metrics = layer / Path(METRICS_CERT_PATH).relative_to("/etc")
        metrics.mkdir(parents=True, exist_ok=True)
        for file in ("tls.crt", "tls.key"):
            shutil.copyfile(cert_dir / file, metrics / file)
        launch(f"{name}-manager", manager_argv(binary, config, kubeconfig), overlay=layer)


def _get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=5) as response:
        return bytes(response.read())


def wait(api: Any, ports: dict[str, int], died: Callable[[], str | None]) -> None:
    """Both managers' readiness, then the VCs: created through Kueue's webhooks (so only
    once it serves them) and counted ready when Kueue has made each ClusterQueue
    `Active`."""
    for name in ("jobset", "kueue"):
        url = f"http://127.0.0.1:{ports[f'{name}-healthz']}/readyz"
        processes.wait_until(
            lambda url=url: _get(url) == b"ok",  # type: ignore[misc]
            90,
            f"{name}-manager /readyz",
            alive=died,
        )
    objects = virtual_clusters()

    def created() -> bool:
        kube.apply(api, objects)
        return True

    processes.wait_until(
        created, 60, "Kueue queues created (through its webhooks)", interval=0.5, alive=died
    )
    custom = kube.custom(api)

    def active() -> bool:
        for vc in manifests.VIRTUAL_CLUSTERS:
            queue = custom.get_cluster_custom_object(
                "kueue.x-k8s.io", "v1beta2", "clusterqueues", vc
            )
            conditions = (queue.get("status") or {}).get("conditions") or []
            if not any(c["type"] == "Active" and c["status"] == "True" for c in conditions):
                return False
        return True

    processes.wait_until(active, 60, "Kueue ClusterQueues Active", alive=died)
