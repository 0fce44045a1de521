"""Many users' servers on one API server: what N KubernetesBackends (each with its own
watch cache, as N users' Jupyter servers have) cost kube-apiserver while each refreshes
the VC view every 5 s and the hardware view every 10 s (the panel's intervals), against
one such backend. Goal: the cost per user flat from 1 to N users, and no cluster-wide pod
watch per user.

    python -m benchmarks.many_users [--users 200] [--seconds 60] [--flavor volcano]
                                    [--cluster-dir DIR]

Each user is a namespace ``mu-<run>-NNNN`` with a ServiceAccount bound to the test
cluster's ``jupyter-pai-user`` role there and to ``jupyter-pai-cluster-reader``, and
nothing else, authenticated by a TokenRequest token (not impersonation): least privilege,
as a user's server in a namespace per user has. The N backends run in this one process.
Three windows of ``--seconds`` are measured: idle (no backend), 1 user, N users, each
after every backend has synced and every panel refreshed once; a user's figure is the
window's minus idle's, divided by the users. Read as the admin from kube-apiserver's
``/metrics``: ``apiserver_request_total`` (requests/s, by verb and resource) and
``apiserver_longrunning_requests{verb="WATCH"}`` (watches held, by resource and scope);
from its process (psutil, its pid from the cluster's state): CPU seconds and RSS.

Starts its own test cluster (all schedulers, no runner node) unless ``--cluster-dir``
names a running one; the namespaces it makes are deleted after, and waited for."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import random
import re
import ssl
import tempfile
import time
import urllib.request
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from benchmarks.kube_cluster import cluster
from jupyter_pai.backends.kubernetes import KubernetesBackend
from jupyter_pai.backends.selfcheck import check_and_log
from tests.cluster import controlplane, kube, manifests
from tests.cluster import hived as cluster_hived
from tests.cluster import kueue as cluster_kueue

PREFIX = "mu-"
SA = "pai"
#: The test cluster's roles of a user (the chart's): in the namespace, and cluster-wide reads.
USER_ROLE, CLUSTER_READER = "jupyter-pai-user", "jupyter-pai-cluster-reader"
VC_SECONDS = 5.0  # the panel's poll (jobs and VCs) while it is visible
HW_SECONDS = 10.0  # the hardware view's refresh
SAMPLE = re.compile(r"^([a-zA-Z_:][\w:]*)(?:\{(.*)\})?\s+(\S+)")
LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


# -- the users -------------------------------------------------------------------------------


def user_objects(names: list[str], flavor: str) -> list[dict[str, Any]]:
    """A namespace per user with its ServiceAccount bound to the user role there, the
    flavor's namespaced VC objects (native: quotas; kueue: LocalQueues), and one binding
    of every ServiceAccount to the cluster reader."""
    objects: list[dict[str, Any]] = []
    for ns in names:
        objects += [
            manifests.namespace(ns),
            {
                "apiVersion": "v1",
                "kind": "ServiceAccount",
                "metadata": {"name": SA, "namespace": ns},
            },
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "RoleBinding",
                "metadata": {"name": "jupyter-pai-user", "namespace": ns},
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "ClusterRole",
                    "name": USER_ROLE,
                },
                "subjects": [{"kind": "ServiceAccount", "name": SA, "namespace": ns}],
            },
        ]
        for vc, gpus in manifests.VIRTUAL_CLUSTERS.items():
            if flavor == "native" and gpus is not None:
                objects.append(manifests.vc_quota(vc, gpus, ns))
            if flavor == "kueue":
                objects.append(cluster_kueue.local_queue(vc, ns))
    objects.append(
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": f"{PREFIX}cluster-reader"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": CLUSTER_READER,
            },
            "subjects": [{"kind": "ServiceAccount", "name": SA, "namespace": ns} for ns in names],
        }
    )
    return objects


def make_users(state: controlplane.State, count: int, flavor: str, tmp: Path) -> list[Path]:
    """Each user's kubeconfig: a TokenRequest token of its ServiceAccount."""
    api = kube.api_client(Path(state.kubeconfig))
    run = f"{random.randrange(16**4):04x}"  # a cut-short run's namespaces may be going still
    names = [f"{PREFIX}{run}-{i:04d}" for i in range(count)]
    kube.apply(api, user_objects(names, flavor))
    core = kube.core(api)
    ca = Path(state.directory) / "pki" / "ca.crt"
    out = []
    for ns in names:
        for _ in range(50):  # the ServiceAccount is usable once its controller saw it
            try:
                answer = core.create_namespaced_service_account_token(
                    SA, ns, {"spec": {"expirationSeconds": 3600}}
                )
                break
            except ApiException as error:
                if error.status != 404:
                    raise
                time.sleep(0.1)
        else:
            raise SystemExit(f"no ServiceAccount {ns}/{SA}")
        path = tmp / f"{ns}.kubeconfig"
        kube.write_kubeconfig(path, state.server, ca, ns, answer.status.token, ns)
        out.append(path)
    return out


def delete_users(state: controlplane.State) -> None:
    api = kube.api_client(Path(state.kubeconfig))
    core = kube.core(api)
    for ns in core.list_namespace().items:
        if ns.metadata.name.startswith(PREFIX) and ns.status.phase != "Terminating":
            core.delete_namespace(ns.metadata.name)
    with contextlib.suppress(ApiException):
        client.RbacAuthorizationV1Api(api).delete_cluster_role_binding(f"{PREFIX}cluster-reader")
    # Gone before anything is measured: the namespace controller's work is load too.
    deadline = time.monotonic() + 300
    while any(n.metadata.name.startswith(PREFIX) for n in core.list_namespace().items):
        if time.monotonic() > deadline:
            raise SystemExit(f"namespaces {PREFIX}* still terminating after 300 s")
        time.sleep(1)


# -- kube-apiserver's side ------------------------------------------------------------------


@dataclass
class Reading:
    at: float
    requests: dict[str, float]  # by verb
    by_resource: dict[str, float]  # by "verb resource scope"
    watches: dict[str, float]  # held now, by (resource, scope)
    cpu: float  # the process's CPU seconds
    rss: int


class ApiServer:
    def __init__(self, state: controlplane.State) -> None:
        self.url = state.server.rstrip("/") + "/metrics"
        self.token = state.tokens["admin"]
        self.context = ssl.create_default_context(
            cafile=str(Path(state.directory) / "pki" / "ca.crt")
        )
        self.process = psutil.Process(int(state.processes["kube-apiserver"]["pid"]))

    def read(self) -> Reading:
        request = urllib.request.Request(
            self.url, headers={"Authorization": f"Bearer {self.token}"}
        )
        with urllib.request.urlopen(request, context=self.context, timeout=30) as resp:
            text = resp.read().decode()
        requests: dict[str, float] = defaultdict(float)
        by_resource: dict[str, float] = defaultdict(float)
        watches: dict[str, float] = defaultdict(float)
        for line in text.splitlines():
            m = SAMPLE.match(line)
            if not m or m[1] not in ("apiserver_request_total", "apiserver_longrunning_requests"):
                continue
            labels = dict(LABEL.findall(m[2] or ""))
            if m[1] == "apiserver_request_total":
                requests[labels.get("verb", "")] += float(m[3])
                key = " ".join(labels.get(k, "") for k in ("verb", "resource", "scope"))
                by_resource[key] += float(m[3])
            elif labels.get("verb") == "WATCH":
                watches[f"{labels.get('resource', '')}/{labels.get('scope', '')}"] += float(m[3])
        cpu = self.process.cpu_times()
        return Reading(
            time.monotonic(),
            dict(requests),
            dict(by_resource),
            dict(watches),
            cpu.user + cpu.system,
            self.process.memory_info().rss,
        )


@dataclass
class Window:
    users: int
    seconds: float
    requests: dict[str, float]  # per second, by verb
    by_resource: dict[str, float]  # per second, by "verb resource scope"
    watches: dict[str, float]
    cpu: float  # cores
    rss: int
    start_requests: float = 0.0  # requests made while the backends started
    start_seconds: float = 0.0
    latencies: dict[str, list[float]] = field(default_factory=dict)
    #: This process, where the users' backends run: CPU (cores) and RSS growth.
    own_cpu: float = 0.0
    own_rss: int = 0

    @property
    def rps(self) -> float:
        return sum(self.requests.values())

    @property
    def watch_count(self) -> float:
        return sum(self.watches.values())


def window(before: Reading, after: Reading, users: int) -> Window:
    seconds = after.at - before.at
    verbs = set(before.requests) | set(after.requests)
    return Window(
        users=users,
        seconds=seconds,
        requests={
            v: (after.requests.get(v, 0) - before.requests.get(v, 0)) / seconds for v in verbs
        },
        by_resource={
            k: (v - before.by_resource.get(k, 0)) / seconds
            for k, v in after.by_resource.items()
            if v > before.by_resource.get(k, 0)
        },
        watches=dict(after.watches),
        cpu=(after.cpu - before.cpu) / seconds,
        rss=after.rss,
    )


# -- the users' servers ---------------------------------------------------------------------


async def refresh(b: KubernetesBackend, lat: dict[str, list[float]]) -> None:
    """One user's open panel, until cancelled: jobs and VCs every 5 s, the hardware view
    every 10 s, from a random moment (users do not open their panels in step)."""
    loop = asyncio.get_running_loop()
    await asyncio.sleep(random.uniform(0, VC_SECONDS))
    next_hw = loop.time() + random.uniform(0, HW_SECONDS - VC_SECONDS)
    while True:
        t0 = loop.time()
        await b.list_jobs()
        await b.virtual_clusters()
        lat["vc"].append(loop.time() - t0)
        if loop.time() >= next_hw:
            t1 = loop.time()
            await b.nodes()
            lat["hw"].append(loop.time() - t1)
            next_hw += HW_SECONDS
        await asyncio.sleep(max(0.0, t0 + VC_SECONDS - loop.time()))


async def measure(
    server: ApiServer,
    kubeconfigs: list[Path],
    flavor: str,
    settings: dict[str, str],
    seconds: float,
) -> Window:
    me = psutil.Process()
    rss_before = me.memory_info().rss
    backends = [
        KubernetesBackend(kubeconfig=str(k), flavor=flavor, user=k.stem, **settings)
        for k in kubeconfigs
    ]
    before_start = server.read()
    t0 = time.monotonic()
    # Started a few at a time, as servers spawned over a while would be, each with the
    # permission self-check a server runs on its first request.
    for i in range(0, len(backends), 20):
        await asyncio.gather(*(b.start() for b in backends[i : i + 20]))
        await asyncio.gather(*(check_and_log(b) for b in backends[i : i + 20]))
    unsynced = [b.namespace for b in backends if not await b.cache.wait_synced(60)]
    if unsynced:
        raise SystemExit(f"watch caches not synced: {unsynced[:5]}…")
    started = time.monotonic() - t0
    lat: dict[str, list[float]] = defaultdict(list)
    panels = [asyncio.create_task(refresh(b, lat)) for b in backends]
    try:
        await asyncio.sleep(HW_SECONDS)  # every panel open and in its stride
        lat.clear()
        before = server.read()
        own_before = me.cpu_times()
        await asyncio.sleep(seconds)
        after = server.read()
        own_after = me.cpu_times()
        if any(t.done() for t in panels):  # a view that failed: no figures
            next(t for t in panels if t.done()).result()
    finally:
        for t in panels:
            t.cancel()
        await asyncio.gather(*panels, return_exceptions=True)
        for b in backends:
            await b.close()
    out = window(before, after, len(backends))
    out.start_requests = sum(before.requests.values()) - sum(before_start.requests.values())
    out.start_seconds = started
    out.latencies = dict(lat)
    out.own_cpu = (
        own_after.user + own_after.system - own_before.user - own_before.system
    ) / out.seconds
    out.own_rss = me.memory_info().rss - rss_before
    return out


async def idle(server: ApiServer, seconds: float) -> Window:
    before = server.read()
    await asyncio.sleep(seconds)
    return window(before, server.read(), 0)


# -- report -----------------------------------------------------------------------------------


def p(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


def report(base: Window, one: Window, many: Window, flavor: str, load: float) -> None:
    print(
        f"\n{flavor} flavour; {many.seconds:.0f} s windows; load average before: {load:.2f}\n"
        f"idle API server: {base.rps:.1f} requests/s, {base.watch_count:.0f} watches, "
        f"{base.cpu:.3f} cores, RSS {base.rss / 2**20:.0f} MiB\n"
    )
    rows: list[tuple[str, Callable[[Window], float], str]] = [
        ("requests/s", lambda w: w.rps - base.rps, "{:.3f}"),
        ("  LIST/s", lambda w: w.requests.get("LIST", 0) - base.requests.get("LIST", 0), "{:.3f}"),
        ("  GET/s", lambda w: w.requests.get("GET", 0) - base.requests.get("GET", 0), "{:.3f}"),
        (
            "  WATCH/s (re-opened)",
            lambda w: w.requests.get("WATCH", 0) - base.requests.get("WATCH", 0),
            "{:.3f}",
        ),
        ("watches held", lambda w: w.watch_count - base.watch_count, "{:.1f}"),
        (
            "  of them cluster-wide",
            lambda w: (
                sum(v for k, v in w.watches.items() if k.endswith("/cluster"))
                - sum(v for k, v in base.watches.items() if k.endswith("/cluster"))
            ),
            "{:.1f}",
        ),
        ("API server CPU (cores)", lambda w: w.cpu - base.cpu, "{:.4f}"),
        ("API server RSS (MiB)", lambda w: (w.rss - base.rss) / 2**20, "{:.1f}"),
        ("requests to start", lambda w: w.start_requests, "{:.1f}"),
    ]
    print(f"| per user | 1 user | {many.users} users | ratio |")
    print("| --- | --- | --- | --- |")
    for name, f, fmt in rows:
        a, b = f(one), f(many) / many.users
        ratio = f"{b / a:.2f}" if abs(a) > 1e-9 else "-"
        print(f"| {name} | {fmt.format(a)} | {fmt.format(b)} | {ratio} |")
    print(
        f"\nin total with {many.users} users: {many.rps - base.rps:.1f} requests/s, "
        f"{many.watch_count - base.watch_count:.0f} watches, {many.cpu - base.cpu:.3f} cores, "
        f"RSS +{(many.rss - base.rss) / 2**20:.0f} MiB; all started in {many.start_seconds:.1f} s"
    )
    for w in (one, many):
        print(
            f"this process (the users' backends), {w.users} user(s): {w.own_cpu:.3f} cores, "
            f"RSS +{w.own_rss / 2**20:.0f} MiB ({w.own_rss / 2**20 / w.users:.1f} MiB per user)"
        )
    sources = {
        k: (v - base.by_resource.get(k, 0)) / many.users
        for k, v in sorted(many.by_resource.items(), key=lambda kv: -kv[1])
        if (v - base.by_resource.get(k, 0)) / many.users > 0.001
    }
    print(
        "requests/s per user by verb, resource, scope:",
        {k: round(v, 3) for k, v in sources.items()},
    )
    names = {"vc": "VC view (jobs + VCs)", "hw": "hardware view (nodes)"}
    for w in (one, many):
        for view in ("vc", "hw"):
            lat = w.latencies.get(view, [])
            print(
                f"{w.users} user(s), {names[view]} in this process: "
                f"{len(lat)} refreshes, p50 {p(lat, 0.5):.1f} ms, p99 {p(lat, 0.99):.1f} ms"
            )
    cluster_wide = sorted(
        k for k, v in many.watches.items() if k.endswith("/cluster") and v > base.watches.get(k, 0)
    )
    print("cluster-wide watches the users added:", ", ".join(cluster_wide) or "none")
    by_resource = {
        k: (v - base.watches.get(k, 0)) / many.users
        for k, v in sorted(many.watches.items())
        if v - base.watches.get(k, 0) > 0.5
    }
    print("watches per user by resource:", {k: round(v, 2) for k, v in by_resource.items()})
    pods = by_resource.get("pods/cluster", 0.0)
    print(f"cluster-wide pod watches per user: {pods:.2f} (goal 0)")


@contextlib.contextmanager
def users(state: controlplane.State, count: int, flavor: str) -> Iterator[list[Path]]:
    with tempfile.TemporaryDirectory(prefix="pai-many-users-") as tmp:
        delete_users(state)  # a run cut short left them
        t0 = time.monotonic()
        paths = make_users(state, count, flavor, Path(tmp))
        print(
            f"{count} users (namespace, ServiceAccount, bindings, token) in {time.monotonic() - t0:.1f}s",
            flush=True,
        )
        try:
            yield paths
        finally:
            delete_users(state)


async def run(
    state: controlplane.State, kubeconfigs: list[Path], flavor: str, seconds: float
) -> None:
    settings: dict[str, str] = {}
    if flavor == "hived":
        settings = {
            "hived_url": cluster_hived.web_url(Path(state.directory)) or "",
            "hived_cpu_sku": cluster_hived.CPU_SKU,
        }
    server = ApiServer(state)
    load = psutil.getloadavg()[0]
    print(f"idle window ({seconds:.0f} s)…", flush=True)
    base = await idle(server, seconds)
    print("1 user…", flush=True)
    one = await measure(server, kubeconfigs[:1], flavor, settings, seconds)
    await asyncio.sleep(5)  # its watches end
    print(f"{len(kubeconfigs)} users…", flush=True)
    many = await measure(server, kubeconfigs, flavor, settings, seconds)
    report(base, one, many, flavor, load)


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--users", type=int, default=200)
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--flavor", choices=("native", "volcano", "kueue", "hived"), default="volcano")
    ap.add_argument("--cluster-dir", help="use this running cluster (tests.cluster up --dir)")
    args = ap.parse_args()
    if args.users < 1:
        raise SystemExit("--users must be at least 1")
    with (
        cluster(args.cluster_dir, runner=False) as state,
        users(state, args.users, args.flavor) as kubeconfigs,
    ):
        asyncio.run(run(state, kubeconfigs, args.flavor, args.seconds))


if __name__ == "__main__":
    main()
