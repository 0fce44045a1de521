"""The Kubernetes backend's configuration: every ``c.KubernetesBackend`` traitlet, with
its environment variable as default where it has one. :class:`.KubernetesBackend` is
made of these and of its life cycle (:mod:`.backend`)."""

from __future__ import annotations

import os

from traitlets import Bool, Dict, Float, Int, List, Unicode, default

from ..base import Backend
from . import connect


class KubernetesSettings(Backend):
    """The traitlets of :class:`.KubernetesBackend` (configured by that name)."""

    name = "kubernetes"

    namespace = Unicode(
        help="""Namespace of the jobs. Default: $JUPYTER_PAI_NAMESPACE, else the kubeconfig
        context's namespace, else the in-cluster service account's, else ``default``.""",
    ).tag(config=True)

    @default("namespace")
    def _default_namespace(self) -> str:
        return connect.default_namespace(self.kubeconfig or None, self.context or None)

    flavor = Unicode(
        help="""How jobs become objects: ``volcano`` (default), ``kueue``, ``hived``, or
        ``native`` (Kubernetes' own gang PodGroups with batch Jobs; a virtual cluster is a
        PriorityClass ``vc-<name>``). Default: $JUPYTER_PAI_FLAVOR.""",
    ).tag(config=True)

    @default("flavor")
    def _default_flavor(self) -> str:
        return os.environ.get("JUPYTER_PAI_FLAVOR") or "volcano"

    kubeconfig = Unicode(
        "", help="Kubeconfig file; default $KUBECONFIG or ~/.kube/config, else in-cluster."
    ).tag(config=True)
    context = Unicode("", help="Kubeconfig context; default its current context.").tag(config=True)
    default_image = Unicode(
        "python:3.11-slim", help="Image of task roles whose spec names none."
    ).tag(config=True)
    node_selector = Dict(
        help="""Node selector of every job pod, e.g. ``{"gpu-pool": "a100"}``."""
    ).tag(config=True)
    image_pull_secrets = Dict(
        Unicode(),
        help="""Registry host → the Secret (type ``kubernetes.io/dockerconfigjson``, in the
        job's namespace) pods pull that registry's images with, e.g.
        ``{"harbor.example.com": "team-registry"}``. ``PAIConfig.image_registries`` entries
        with a ``pullSecret`` add theirs.""",
    ).tag(config=True)
    gpu_resource = Unicode("nvidia.com/gpu", help="The extended resource GPUs are.").tag(
        config=True
    )
    vc_priority_prefix = Unicode(
        "vc-", help="native flavor: PriorityClass name = prefix + virtual cluster."
    ).tag(config=True)
    allowed_virtual_clusters = List(
        Unicode(),
        help="""Virtual clusters users of this server may submit to; empty: all the cluster
        offers. Example: ``["default", "research"]``. Default: $JUPYTER_PAI_VIRTUAL_CLUSTERS
        (comma-separated; JupyterHub's spawn sets it from the user's groups).""",
    ).tag(config=True)

    @default("allowed_virtual_clusters")
    def _default_allowed_virtual_clusters(self) -> list[str]:
        listed = os.environ.get("JUPYTER_PAI_VIRTUAL_CLUSTERS", "")
        return [vc.strip() for vc in listed.split(",") if vc.strip()]

    storage_label_selector = Unicode(
        "",
        help="""Only persistent volume claims with these labels are storages
        (e.g. ``jupyter-pai.io/storage=true``); empty: every claim in the namespace.""",
    ).tag(config=True)
    storage_local_paths = Dict(
        help="""Claims this Jupyter server has mounted: ``{claim: local path}``; these are
        used directly, the others through a short-lived helper pod (mounting the claim
        read-write unless the storage is read-only).""",
    ).tag(config=True)
    storage_helper_image = Unicode(
        "python:3.11-slim", help="Image of the storage helper pod (needs python3)."
    ).tag(config=True)
    storage_helper_idle = Float(
        60.0,
        help="""Seconds a storage helper pod waits for the next request before it is
        deleted (it is reused meanwhile; all are deleted when the server stops).""",
    ).tag(config=True)
    sync_timeout = Float(10.0, help="Seconds to wait for the first list of each kind.").tag(
        config=True
    )
    leftover_grace_seconds = Float(
        300.0,
        help="""At start, a job's Secret or Service that has no owner (its creation was
        cut short by a killed process) and is older than this is given its job as owner, or
        deleted where the job does not exist; younger ones may be a submission under way.""",
    ).tag(config=True)
    request_timeout = Float(15.0, help="Seconds per API-server request.").tag(config=True)
    log_relay = Bool(
        False,
        help="""Open and read log follows in the log relay, a process of this one's own
        (:mod:`.logrelay`): set by the Jupyter server, whose loop is busy with its other
        requests. A command-line or notebook backend reads its follows itself.""",
    )
    master_port = Int(29500, help="MASTER_PORT of torch.distributed.").tag(config=True)
    prometheus_url = Unicode(
        help="""A Prometheus server that scrapes NVIDIA's DCGM exporter, for GPU utilisation
        per task and node, and the node exporter, for each node's CPU and memory use
        (e.g. ``http://prometheus.monitoring:9090``); empty: none. Default:
        $JUPYTER_PAI_PROMETHEUS_URL.""",
    ).tag(config=True)

    @default("prometheus_url")
    def _default_prometheus_url(self) -> str:
        return os.environ.get("JUPYTER_PAI_PROMETHEUS_URL", "")

    hived_url = Unicode(
        help="""hived flavor: HiveD's web server (``webServerAddress`` of its config, e.g.
        ``http://hivedscheduler.pai:30096``), whose virtual clusters and cells are listed
        and checked at submission; empty: VC names are not checked (HiveD refuses unknown
        ones). Default: $JUPYTER_PAI_HIVED_URL.""",
    ).tag(config=True)

    hived_cpu_sku = Unicode(
        help="""hived flavor: the SKU of HiveD's CPU cells (one CPU each, as in OpenPAI's
        CPU-only virtual clusters), where tasks without GPUs are placed: one cell per CPU
        they ask. Empty: tasks without GPUs are refused (HiveD places GPU cells only).
        Default: $JUPYTER_PAI_HIVED_CPU_SKU.""",
    ).tag(config=True)

    @default("hived_cpu_sku")
    def _default_hived_cpu_sku(self) -> str:
        return os.environ.get("JUPYTER_PAI_HIVED_CPU_SKU", "")

    @default("hived_url")
    def _default_hived_url(self) -> str:
        return os.environ.get("JUPYTER_PAI_HIVED_URL", "")

    pod_security = Unicode(
        help="""The Pod Security level the namespace enforces, which every pod made here
        meets: ``baseline`` (images run as their own user) or ``restricted`` (non-root, no
        capabilities: pods run as ``run_as_user``, and the ssh plugin is refused). Default:
        $JUPYTER_PAI_POD_SECURITY (set by jupyter_pai.hub), else baseline.""",
    ).tag(config=True)
    run_as_user = Int(
        1000,
        allow_none=True,
        help="""``restricted`` only: the user id of every container (None: the image's
        own, which must be a non-root number) and ``run_as_group`` their group and the
        volumes' (``fsGroup``).""",
    ).tag(config=True)
    run_as_group = Int(100, allow_none=True, help="See ``run_as_user``.").tag(config=True)

    @default("pod_security")
    def _default_pod_security(self) -> str:
        return os.environ.get("JUPYTER_PAI_POD_SECURITY", "baseline")

    utilisation_cache_seconds = Float(
        10.0,
        help="""Seconds Prometheus's answers are reused: every job's utilisation comes
        from one set of queries per this period, however many jobs and viewers there are.""",
    ).tag(config=True)
