"""The distributed engine: jobs as Kubernetes objects of one flavor (Volcano by default),
read back through a shared watch cache so listing jobs costs no API-server request.

This module holds the life cycle (the configuration is :mod:`.settings`); what jobs look like is
:mod:`.jobviews`, writing them :mod:`.joblifecycle`, logs :mod:`.logs`, and everything a
scheduler does its own way the flavor (:mod:`.flavors`)."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from ... import __version__
from ...errors import Forbidden, PAIError, Unavailable
from ...spec.protocol import JobProtocol
from ..base import ClientConnection, LogQuery, LogStream
from ..models import (
    GpuTypeUsage,
    Info,
    JobDetail,
    JobEvent,
    JobFilter,
    JobSummary,
    JobUtilisation,
    NodeResources,
    Resources,
    TaskStatus,
    VirtualCluster,
)
from ..selfcheck import SelfCheck
from ..taskports import PortAddress
from ..utilisation import GpuReading, job_utilisation
from . import connect, gpu_placement, identity, registries, selfcheck, vc_usage
from .claimstorage import ClaimStorage
from .flavors import FLAVORS, Flavor, FlavorSettings, HivedSettings, NativeSettings
from .gpumetrics import PrometheusGpus
from .interrupted import finish_interrupted
from .joblifecycle import JobLifecycle
from .jobssh import add_job_key, generate_key_pair, needs_job_key
from .jobviews import OWNED, JobViews, detail
from .logarchive import LogArchiver
from .logcache import EndedLogs
from .logrelay import LogRelay
from .logs import task_log
from .naming import JobNames, make_names
from .nodemetrics import NO_PROMETHEUS, PrometheusNodes, attach
from .nodeusage import node_resources, requested_gpus
from .pods import PodOptions
from .podsecurity import PodSecurity
from .portforward import PortForward, TaskPortForwards
from .resources import NODE
from .rest import ApiError, Rest, path, typed
from .settings import KubernetesSettings
from .states import Obj, job_view
from .storage import HelperPods

#: A pod whose containers have all exited: its log is final.
ENDED_PHASES = ("Succeeded", "Failed")
#: How long a kernel's forwarded connection made before its port listens is held and
#: tried again (the launcher, then ipykernel, start a moment after the pod runs).
FORWARD_PATIENCE = 30.0


class KubernetesBackend(ClaimStorage, KubernetesSettings):
    """Jobs of one namespace, as the credentials it is given allow (its configuration:
    :class:`.KubernetesSettings`)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if self.flavor not in FLAVORS:
            raise ValueError(
                f"KubernetesBackend.flavor is {self.flavor!r}; choose one of {', '.join(FLAVORS)}"
            )
        self.options = PodOptions(
            namespace=self.namespace,
            default_image=self.default_image,
            node_selector=dict(self.node_selector),
            image_pull_secrets=dict(self.image_pull_secrets),
            gpu_resource=self.gpu_resource,
            master_port=self.master_port,
            security=PodSecurity(self.pod_security, self.run_as_user, self.run_as_group),
        )
        # Each flavor's settings, from the traitlets; the chosen flavor takes its own.
        settings: dict[type[FlavorSettings], FlavorSettings] = {
            HivedSettings: HivedSettings(cpu_sku=self.hived_cpu_sku, url=self.hived_url),
            NativeSettings: NativeSettings(priority_prefix=self.vc_priority_prefix),
        }
        cls = FLAVORS[self.flavor]
        self.scheduler_flavor: Flavor = cls(self.options, settings.get(cls.settings_type))
        self.views = JobViews(self.scheduler_flavor, self.namespace)
        self.scheduler_flavor.cluster_objects = self.views.objects
        self.cache = self.views.cache
        # Every flavor but hived (HiveD's SKU is the type) places GPU types on nodes.
        self.gpu_types = gpu_placement.ClusterGpuTypes(self._rest)
        if self.flavor != "hived":
            self.scheduler_flavor.gpu_usage = self._gpu_type_usage
        self.lifecycle = JobLifecycle(self.views, self._rest, self.log)
        # Every view derived (on a watch event or a read) may end a job the completion
        # policy decided, where the scheduler does not.
        self.views.on_view = self.lifecycle.look
        # Evicted attempts' logs, kept in the cluster before their pods go.
        self.archiver = LogArchiver(self.views, self._rest, self.log)
        self.rest: Rest | None = None
        self._api: Any = None
        self.helpers: HelperPods | None = None
        self._sweep: asyncio.Task[None] | None = None
        self.port_forwards = TaskPortForwards(self)
        self._relay: LogRelay | None = None
        self.ended_logs = EndedLogs()
        self.gpu_metrics = (
            PrometheusGpus(self.prometheus_url, self.namespace, ttl=self.utilisation_cache_seconds)
            if self.prometheus_url
            else None
        )
        self.node_metrics = (
            PrometheusNodes(self.prometheus_url, ttl=self.utilisation_cache_seconds)
            if self.prometheus_url
            else None
        )

    # -- life cycle ----------------------------------------------------------------------

    async def start(self) -> None:
        self._api = await connect.api_client(self.kubeconfig or None, self.context or None)
        self.rest = Rest(self._api, timeout=self.request_timeout)
        self.views.watch(self.rest, claims_selector=self.storage_label_selector or None)
        self.lifecycle.watch_endings()
        self.archiver.watch()
        self.cache.start()
        self.helpers = HelperPods(
            self.rest,
            self.namespace,
            self.user,
            self.storage_helper_image,
            self.options,
            idle=self.storage_helper_idle,
        )
        self._sweep = asyncio.create_task(self._sweep_left_behind(self.helpers))
        if not await self.cache.wait_synced(self.sync_timeout):
            self.log.warning("jupyter-pai: the watch cache is not synced yet; answering 503")

    async def _sweep_left_behind(self, helpers: HelperPods) -> None:
        """What a killed server or CLI left goes at the next start, so nothing it made
        outlives it for good: its helper pods, and the Secret or Service of a job whose
        creation it did not finish. Its port-forwards were sockets of its process and ended
        with it."""
        try:
            swept = await helpers.sweep()
            if swept:
                self.log.info("jupyter-pai: deleted storage helper pods left: %s", ", ".join(swept))
            if not await self.cache.wait_synced(self.sync_timeout):
                return  # the job objects' owners are not known yet; the next start looks
            finished = await finish_interrupted(
                self._rest(),
                self.namespace,
                self.user,
                OWNED,
                self.scheduler_flavor.primary_kind,
                self.cache["primary"].values(),
                self.leftover_grace_seconds,
            )
            if finished:
                self.log.info(
                    "jupyter-pai: finished interrupted job creations: %s", ", ".join(finished)
                )
        except PAIError as error:
            self.log.warning("jupyter-pai: cannot look for objects left behind: %s", error)
        except Exception:  # housekeeping: never a reason for close() to fail
            self.log.exception("jupyter-pai: looking for objects left behind failed")

    async def close(self) -> None:
        if self._sweep is not None:
            self._sweep.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._sweep
        await self.lifecycle.drain()  # an ending started here is finished, not cut short
        await self.archiver.drain()
        if self.helpers is not None:
            await self.helpers.close()  # no helper pod outlives the server
        await self.port_forwards.close()
        if self._relay is not None:
            await self._relay.close()
            self._relay = None
        await self.cache.stop()
        if self._api is not None:
            await self._api.close()
            self._api = None

    def _rest(self) -> Rest:
        if self.rest is None:
            raise Unavailable("the Kubernetes backend is not started")
        return self.rest

    # -- jobs ------------------------------------------------------------------------------

    async def info(self) -> Info:
        return Info(
            backend=self.name,
            flavor=self.flavor,
            version=__version__,
            user=self.user,
            namespace=self.namespace,
        )

    async def self_check(self) -> SelfCheck:
        return await selfcheck.check(self, self.rest, self.scheduler_flavor.own_kinds)

    async def list_jobs(self, query: JobFilter | None = None) -> list[JobSummary]:
        return self.views.summaries(query)

    async def jobs_version(self) -> str | None:
        # Job views derive from the watch cache alone: its counters are the tag.
        self.cache.check()
        return ",".join(f"{epoch}.{version}" for epoch, version in self.cache.counters())

    async def get_job(self, job_id: str) -> JobDetail:
        return self.views.detail(job_id)

    async def events(self, job_id: str) -> list[JobEvent]:
        return self.views.events(job_id)

    async def submit(self, job: JobProtocol, *, working_dir: str | None = None) -> JobDetail:
        self.cache.check()
        self.check_runtime_plugins(job)
        await self.scheduler_flavor.refresh()
        self.lifecycle.check(job, self.allowed_virtual_clusters)
        names = make_names(job, self.user)
        if self.views.taken(names.job_id):
            raise self.lifecycle.conflict(names)
        typed = None
        if self.flavor != "hived" and gpu_placement.typed_roles(job):
            await self.gpu_types.for_job(job)  # a SpecError for a type the cluster lacks
            typed = gpu_placement.choosable(self.gpu_types.last or [])
        built = self.scheduler_flavor.build_typed(job, names, typed)
        if needs_job_key(job):  # made here, so no builder output holds it
            pair = generate_key_pair(f"jupyter-pai job {names.job_id}")
            add_job_key(built.objects, names, pair)
        primary = await self.lifecycle.create(built.objects, built.primary, names)
        await self._until_cached(names.job_id)
        view = job_view(job, names, primary, [], flavor=self.scheduler_flavor)
        view.waiting_reason = "submitted; waiting for the scheduler"
        return detail(primary, job, names, view)

    async def job_may_change(self, job_id: str, timeout: float) -> None:
        # A job changes with its pods (or its primary object, less often): both watched.
        waits = [asyncio.create_task(self.cache[k].changed(timeout)) for k in ("pods", "primary")]
        try:
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for wait in waits:
                wait.cancel()

    async def _until_cached(self, job_id: str, timeout: float = 5.0) -> None:
        """Read your writes: a job just created is in the watch cache (milliseconds
        later) before submit returns, so asking for it at once does not answer 404. A
        cache that lags longer (a broken watch) is not waited for beyond ``timeout``."""
        reflector = self.cache["primary"]
        deadline = asyncio.get_running_loop().time() + timeout
        while not self.views.taken(job_id):
            left = deadline - asyncio.get_running_loop().time()
            if left <= 0:
                return
            await reflector.changed(min(left, 0.1))

    async def delete_job(self, job_id: str) -> None:
        self._own_namespace()
        await self.lifecycle.delete(job_id, self.user)

    async def stop_job(self, job_id: str) -> JobDetail:
        self._own_namespace()
        primary, d = await self.lifecycle.stop(job_id, self.user)
        return detail(primary, *d.parts())

    async def logs(
        self, job_id: str, query: LogQuery, connection: ClientConnection | None = None
    ) -> LogStream:
        job, names, view = self.views.view(self.views.primary(job_id)).parts()
        return await task_log(
            self._rest(),
            self.namespace,
            job_id,
            job,
            names,
            view,
            query,
            ended=(self.ended_logs, self._ended_pod_uid),
            relay=self._log_relay() if self.log_relay else None,
            connection=connection,
        )

    def _log_relay(self) -> LogRelay:
        """Log follows are opened and read by the log relay, with the same credentials."""
        if self._relay is None:
            self._relay = LogRelay(
                self.kubeconfig or None, self.context or None, self.request_timeout
            )
        return self._relay

    def _ended_pod_uid(self, name: str) -> str | None:
        """The uid of the pod, where its containers have all exited (its log is final)."""
        pod = self.cache["pods"].get(name, self.namespace)
        if pod is None or (pod.get("status") or {}).get("phase") not in ENDED_PHASES:
            return None
        return str(pod["metadata"].get("uid") or "") or None

    async def reach_port(self, job: JobDetail, task: TaskStatus, port: int) -> PortAddress:
        self._own_namespace()
        # The pod's IP is not reachable from outside the cluster: the API server forwards.
        d = self.views.view(self.views.primary(job.id))
        pod = next(
            (t.pod for t in d.view.tasks if (t.role, t.index) == (task.role, task.index)), None
        )
        if pod is None:
            raise Unavailable(f"task {task.role}-{task.index} of job {job.id} has no pod yet")
        self._rest()
        # As the app names itself in its pod; reached through a port-forward's socket.
        return PortAddress(
            "127.0.0.1", port, socket=await self.port_forwards.local_socket(pod, port)
        )

    async def forward_ports(self, job: JobDetail, ports: list[int]) -> PortForward:
        self._own_namespace()
        # Patient: a kernel's client connects before ipykernel listens.
        forward = PortForward(self, self.running_pod(job), ports, patience=FORWARD_PATIENCE)
        await forward.start()
        return forward

    def _own_namespace(self) -> None:
        """Under JupyterHub, a job's annotation makes it the user's only in the user's
        own namespace (:mod:`.identity`)."""
        reason = identity.foreign_namespace(self.namespace)
        if reason is not None:
            raise Forbidden(reason)

    def running_pod(self, job: JobDetail) -> str:
        """The name of the job's running pod at its first task's IP."""
        names = JobNames.from_annotations(self.views.primary(job.id)["metadata"]["annotations"])
        ip = job.tasks[0].ip
        for _, _, pod in self.views.pods(names):
            status = pod.get("status") or {}
            if status.get("phase") == "Running" and status.get("podIP") == ip:
                return str(pod["metadata"]["name"])
        raise Unavailable(f"job {job.id} has no running pod at {ip}")

    async def utilisation(self, job_id: str) -> JobUtilisation:
        job = self.views.detail(job_id)
        d = self.views.view(self.views.primary(job_id))
        if self.gpu_metrics is None:
            note = "GPU utilisation needs a Prometheus server (c.KubernetesBackend.prometheus_url)"
            return job_utilisation(job, {}, source=None, note=note)
        snapshot = await self.gpu_metrics.snapshot()
        readings: dict[tuple[str, int], list[GpuReading]] = {
            (t.role, t.index): snapshot.pods.get(t.pod, []) for t in d.view.tasks if t.pod
        }
        return job_utilisation(job, readings, source="prometheus", note=snapshot.note)

    # -- virtual clusters ----------------------------------------------------------------

    async def nodes(self) -> list[NodeResources]:
        try:
            nodes = await self._rest().get(path(NODE, None))
        except ApiError as error:
            raise typed(error) from None
        job_ids = {}
        for primary in self.cache["primary"].values():
            names = JobNames.from_annotations(primary["metadata"].get("annotations") or {})
            job_ids[names.base] = names.job_id
        objects = nodes.get("items") or []
        pods = self.cache["pods"].values()
        out = node_resources(objects, pods, job_ids, self.gpu_resource, self._pod_gpus)
        if self.node_metrics is None:
            for node in out:
                node.utilisation_note = NO_PROMETHEUS
        else:
            attach(out, objects, await self.node_metrics.snapshot())
        return out

    @property
    def places_gpu_types(self) -> bool:
        return True  # HiveD's skuType; the others a node affinity (gpu_placement)

    def _gpu_type_usage(self) -> dict[str, GpuTypeUsage]:
        """The cluster's GPU types as last read, with what the watched pods hold."""
        found = gpu_placement.usage(
            self.gpu_types.last or [], self.cache["pods"].values(), self.gpu_resource
        )
        return {t.name: t for t in found}

    async def registry_credentials(self, secret: str, host: str) -> tuple[str, str] | None:
        return await registries.secret_credentials(self._rest(), self.namespace, secret, host)

    async def images_on_gpu_nodes(self) -> dict[str, int] | None:
        # The nodes the GPU types are read from (kept a while): not a LIST per picker.
        return registries.gpu_node_images(await self.gpu_types.nodes(), self.gpu_resource)

    def _pod_gpus(self, pod: Obj) -> int:
        held = self.scheduler_flavor.pod_gpus(pod)
        return requested_gpus(pod, self.gpu_resource) if held is None else held

    async def _cluster_total(self) -> Resources:
        try:
            nodes = await self._rest().get(path(NODE, None))
        except (ApiError, Unavailable):
            return Resources()
        return vc_usage.cluster_total(nodes.get("items") or [], self.gpu_resource)

    async def virtual_clusters(self) -> list[VirtualCluster]:
        self.cache.check()
        await self.scheduler_flavor.refresh()
        jobs = await self.list_jobs()
        cluster = await self._cluster_total()
        found = self.views.virtual_clusters(jobs, cluster, self.allowed_virtual_clusters)
        if self.flavor != "hived":  # a VC is not tied to nodes: the cluster's types
            with contextlib.suppress(PAIError):  # no node LIST: the rows without types
                await self.gpu_types.types()
            vc_usage.add_gpu_types(found, list(self._gpu_type_usage().values()))
        return found
