"""Start and stop the test control plane: etcd, kube-apiserver, kube-controller-manager,
kube-scheduler (with its gang scheduling), Volcano (webhook manager, controller manager,
scheduler), kwok and the pod runner, on free loopback ports, with all state in one
directory."""

from __future__ import annotations

import json
import os
import random
import secrets
import shutil
import signal
import ssl
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import yaml

from . import build, hived, kube, kueue, kwokconfig, manifests, pki, prebuilt, processes, volcano

REPO_ROOT = Path(__file__).resolve().parents[2]
STATE_FILE = "state.json"

# Alpha gates for the scheduler's native gang scheduling (KEP-4671) and for the Job
# controller creating a Workload + gang PodGroup for Indexed Jobs (KEP-5547).
FEATURE_GATES = "GenericWorkload=true,GangScheduling=true,WorkloadWithJob=true"
RUNTIME_CONFIG = "scheduling.k8s.io/v1alpha2=true"

# Every address the cluster hands out is on loopback, so a stray connection to a pod or a
# service never leaves the machine: kwok's simulated pods, the runner's real pods, and
# service cluster IPs.
KWOK_POD_CIDR = "127.72.0.1/16"
SERVICE_CIDR = "127.74.0.0/16"


def runner_pod_net() -> str:
    """127.N: a /16 of its own for each cluster's real pods, so two clusters on one
    machine do not hand out the same pod IP."""
    return f"127.{random.randint(80, 250)}"


def default_dir() -> Path:
    base = os.environ.get("JUPYTER_PAI_CLUSTER_DIR")
    return Path(base) if base else Path(os.environ.get("TMPDIR", "/tmp")) / "jupyter-pai-cluster"


@dataclass
class Options:
    gpu_pool: manifests.NodeShape | None = manifests.DEFAULT_GPU_POOL
    runner_pool: manifests.NodeShape | None = manifests.DEFAULT_RUNNER_POOL
    # Tie every process to the caller's life (the pytest fixture); `up` from the CLI
    # leaves them running in the background instead.
    tie_to_parent: bool = False
    # Volcano's three components, CRDs, webhooks and queues beside kube-scheduler.
    volcano: bool = True
    # Kueue's and JobSet's managers, CRDs, webhooks and queues.
    kueue: bool = True
    # HiveD and the kube-scheduler that uses it as its extender.
    hived: bool = True
    # vc-scheduler's --schedule-period (how often it opens a session); None: its 1s default.
    volcano_schedule_period: str | None = None

    @classmethod
    def runner_only(cls, runner_pool: manifests.NodeShape | None = None) -> Options:
        return cls(gpu_pool=None, runner_pool=runner_pool or manifests.DEFAULT_RUNNER_POOL)


@dataclass
class State:
    directory: str
    server: str
    kubeconfig: str
    users: dict[str, str]
    tokens: dict[str, str]
    processes: dict[str, dict[str, Any]] = field(default_factory=dict)
    runner_nodes: list[str] = field(default_factory=list)
    gpu_nodes: list[str] = field(default_factory=list)
    started_seconds: float = 0.0
    # Whether the processes die with the process that started them (the fixture).
    tie_to_parent: bool = False

    @classmethod
    def load(cls, directory: Path) -> State | None:
        path = directory / STATE_FILE
        if not path.is_file():
            return None
        return cls(**json.loads(path.read_text()))

    def save(self) -> None:
        path = Path(self.directory) / STATE_FILE
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(asdict(self), indent=2))
        tmp.replace(path)


class ControlPlane:
    def __init__(self, directory: Path | None = None) -> None:
        self.directory = (directory or default_dir()).resolve()

    # -- public -------------------------------------------------------------------------

    def up(self, options: Options | None = None) -> State:
        options = options or Options()
        start = time.monotonic()
        self.down()  # a stale cluster in the same directory goes first
        bin_dir = build.ensure_built()
        assets = build.ensure_assets()
        volcano_dir = build.ensure_volcano() if options.volcano else None
        kueue_dirs = (
            (prebuilt.ensure(prebuilt.KUEUE), prebuilt.ensure(prebuilt.JOBSET))
            if options.kueue
            else None
        )
        hived_dir = prebuilt.ensure(prebuilt.HIVED) if options.hived else None
        self.directory.mkdir(parents=True, exist_ok=True)
        try:
            state = self._start(bin_dir, assets, volcano_dir, kueue_dirs, hived_dir, options)
        except Exception as error:
            logs = self._log_tails()
            self.down()
            raise RuntimeError(f"test cluster did not start: {error}\n{logs}") from error
        except BaseException:
            self.down()
            raise
        state.started_seconds = round(time.monotonic() - start, 1)
        state.save()
        return state

    def down(self) -> None:
        state = State.load(self.directory)
        if state is not None:
            # The runner first: it stops the pod processes it started.
            for name in reversed(list(state.processes)):
                info = state.processes[name]
                processes.stop(info["pid"], info["argv0"])
        if self.directory.exists():
            from . import hostsfile

            keep = os.environ.get("JUPYTER_PAI_TEST_KEEP_LOGS")
            if (
                keep and (self.directory / "logs").is_dir()
            ):  # the components' logs outlive the cluster, for a failure's diagnosis
                target = Path(keep) / self.directory.name
                shutil.copytree(self.directory / "logs", target, dirs_exist_ok=True)

            hostsfile.remove_block(hostsfile.marker(self.directory))
            shutil.rmtree(self.directory, ignore_errors=True)

    def stop_process(self, name: str, *, kill: bool = False) -> None:
        """Stop one process of the cluster (SIGTERM, or SIGKILL with `kill`), leaving the
        others running: e.g. kube-apiserver, to see how clients ride out its absence."""
        state = self._state()
        info = state.processes[name]
        processes.stop(info["pid"], info["argv0"], first=signal.SIGKILL if kill else signal.SIGTERM)

    def start_process(self, name: str, timeout: float = 60) -> None:
        """Start a stopped process again with the argv it had (so the same ports, data
        directory and certificates) and wait until it is ready."""
        state = self._state()
        info = state.processes[name]
        if processes.is_running(info["pid"], info["argv0"]):
            raise RuntimeError(f"{name} is running (pid {info['pid']})")
        if name not in RESTARTABLE or "argv" not in info:
            raise ValueError(f"{name} cannot be restarted; restartable: {', '.join(RESTARTABLE)}")
        d = self.directory
        extra: dict[str, Any] = {}
        if info.get("overlay"):
            extra["preexec"] = kueue.etc_overlay(Path(info["overlay"]))
        proc = processes.start(
            info["argv"], d / "logs" / f"{name}.log", tie_to_parent=state.tie_to_parent, **extra
        )
        state.processes[name] = {**info, "pid": proc.pid}
        state.save()

        def died() -> str | None:
            if proc.poll() is None:
                return None
            return f"{name} exited with {proc.returncode}:\n" + processes.log_tail(
                d / "logs" / f"{name}.log"
            )

        processes.wait_until(RESTARTABLE[name](state), timeout, f"{name} ready", alive=died)

    def _state(self) -> State:
        state = State.load(self.directory)
        if state is None:
            raise RuntimeError(f"no cluster in {self.directory}")
        return state

    def _log_tails(self) -> str:
        return "\n".join(
            f"--- {log.name}\n{processes.log_tail(log, 15)}"
            for log in sorted((self.directory / "logs").glob("*.log"))
        )

    def status(self) -> dict[str, bool]:
        state = State.load(self.directory)
        if state is None:
            return {}
        return {
            name: processes.is_running(info["pid"], info["argv0"])
            for name, info in state.processes.items()
        }

    # -- starting -----------------------------------------------------------------------

    def _start(
        self,
        bin_dir: Path,
        assets: Path,
        volcano_dir: Path | None,
        kueue_dirs: tuple[Path, Path] | None,
        hived_dir: Path | None,
        options: Options,
    ) -> State:
        d = self.directory
        for sub in ("pki", "logs", "etcd", "users", "apiserver", "volcano"):
            (d / sub).mkdir(parents=True, exist_ok=True)
        pki_dir = d / "pki"
        ca = pki.make_ca(pki_dir)
        serving_cert, serving_key = pki.make_serving_cert(
            pki_dir, "serving", ca, ["127.0.0.1", "localhost"]
        )
        sa_key, sa_pub = pki.make_service_account_keys(pki_dir)
        ca_file = pki_dir / "ca.crt"

        tokens = {name: secrets.token_hex(16) for name in ("admin", *manifests.USERS)}
        token_lines = [f'{tokens["admin"]},admin,admin,"system:masters"']
        token_lines += [f"{tokens[u]},{u},{u}," for u in manifests.USERS]
        (pki_dir / "tokens.csv").write_text("\n".join(token_lines) + "\n")
        (pki_dir / "tokens.csv").chmod(0o600)

        ports = processes.free_ports(
            (
                "etcd",
                "etcd-peer",
                "apiserver",
                "controller-manager",
                "scheduler",
                "kwok",
                "kwok-runner",
                "runner-kubelet",
                "vc-webhook",
                "vc-webhook-healthz",
                "vc-controller-manager",
                "vc-controller-manager-healthz",
                "vc-scheduler",
                "vc-scheduler-healthz",
                *kueue.PORTS,
                "hived",
                "hived-scheduler",
            )
        )
        server = f"https://127.0.0.1:{ports['apiserver']}"
        admin_kubeconfig = d / "kubeconfig"
        kube.write_kubeconfig(
            admin_kubeconfig, server, ca_file, "admin", tokens["admin"], "default"
        )
        users = {}
        for user in manifests.USERS:
            path = d / "users" / f"{user}.kubeconfig"
            kube.write_kubeconfig(path, server, ca_file, user, tokens[user], user)
            users[user] = str(path)

        runner_nodes = options.runner_pool.names() if options.runner_pool else []
        gpu_nodes = options.gpu_pool.names() if options.gpu_pool else []
        state = State(
            directory=str(d),
            server=server,
            kubeconfig=str(admin_kubeconfig),
            users=users,
            tokens=tokens,
            runner_nodes=runner_nodes,
            gpu_nodes=gpu_nodes,
            tie_to_parent=options.tie_to_parent,
        )

        started: dict[str, subprocess.Popen[bytes]] = {}

        def launch(name: str, argv: list[str], overlay: Path | None = None, **kwargs: Any) -> None:
            if overlay is not None:  # files the process sees under /etc (kueue.etc_overlay)
                kwargs["preexec"] = kueue.etc_overlay(overlay)
            proc = processes.start(
                argv, d / "logs" / f"{name}.log", tie_to_parent=options.tie_to_parent, **kwargs
            )
            started[name] = proc
            state.processes[name] = {"pid": proc.pid, "argv0": argv[0]}
            if name in RESTARTABLE:  # the runner's argv is not enough (its environment)
                state.processes[name]["argv"] = list(argv)
                if overlay is not None:
                    state.processes[name]["overlay"] = str(overlay)
            state.save()  # saved at once, so `down` finds whatever was started

        def died() -> str | None:
            for name, proc in started.items():
                if proc.poll() is not None:
                    log = processes.log_tail(d / "logs" / f"{name}.log")
                    return f"{name} exited with {proc.returncode}:\n{log}"
            return None

        launch(
            "etcd",
            [
                str(bin_dir / "etcd"),
                "--name=default",
                f"--data-dir={d / 'etcd'}",
                f"--listen-client-urls=http://127.0.0.1:{ports['etcd']}",
                f"--advertise-client-urls=http://127.0.0.1:{ports['etcd']}",
                f"--listen-peer-urls=http://127.0.0.1:{ports['etcd-peer']}",
                f"--initial-advertise-peer-urls=http://127.0.0.1:{ports['etcd-peer']}",
                f"--initial-cluster=default=http://127.0.0.1:{ports['etcd-peer']}",
                "--unsafe-no-fsync",
                "--log-level=warn",
            ],
        )
        processes.wait_until(
            lambda: b'"health":"true"' in _http_get(f"http://127.0.0.1:{ports['etcd']}/health"),
            60,
            "etcd health",
            alive=died,
        )

        launch(
            "kube-apiserver",
            [
                str(bin_dir / "kube-apiserver"),
                f"--etcd-servers=http://127.0.0.1:{ports['etcd']}",
                "--bind-address=127.0.0.1",
                "--advertise-address=127.0.0.1",
                f"--secure-port={ports['apiserver']}",
                f"--cert-dir={d / 'apiserver'}",
                f"--tls-cert-file={serving_cert}",
                f"--tls-private-key-file={serving_key}",
                f"--client-ca-file={ca_file}",
                f"--token-auth-file={pki_dir / 'tokens.csv'}",
                "--authorization-mode=RBAC",
                "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
                f"--service-account-key-file={sa_pub}",
                f"--service-account-signing-key-file={sa_key}",
                f"--service-cluster-ip-range={SERVICE_CIDR}",
                "--allow-privileged=true",
                "--endpoint-reconciler-type=none",
                # kwok gives nodes a Hostname address (the node name) that does not resolve.
                "--kubelet-preferred-address-types=InternalIP",
                f"--feature-gates={FEATURE_GATES}",
                f"--runtime-config={RUNTIME_CONFIG}",
                "--enable-priority-and-fairness=false",
                "--profiling=false",
            ],
        )
        admin_token = tokens["admin"]
        processes.wait_until(
            lambda: _http_get(f"{server}/readyz", ca_file, admin_token) == b"ok",
            120,
            "kube-apiserver /readyz",
            alive=died,
        )

        api = kube.api_client(admin_kubeconfig)
        kube.apply(
            api,
            _yaml_documents([assets / "kwok.x-k8s.io_portforwards.yaml"]),
        )
        kube.apply(api, manifests.cluster_objects())
        # `default` exists already: it gets the users' namespaces' Pod Security level too.
        kube.core(api).patch_namespace(
            "default", {"metadata": {"labels": manifests.pod_security_labels()}}
        )
        volcano_crds = volcano.crds(volcano_dir) if volcano_dir is not None else []
        # Volcano's CRDs first: they take a moment to be served, while the rest starts.
        kube.apply(api, volcano_crds)
        kueue_crds = kueue.apply_crds(api, d, *kueue_dirs, ports) if kueue_dirs else []

        launch(
            "kube-controller-manager",
            [
                str(bin_dir / "kube-controller-manager"),
                f"--kubeconfig={admin_kubeconfig}",
                "--leader-elect=false",
                "--bind-address=127.0.0.1",
                f"--secure-port={ports['controller-manager']}",
                f"--cert-dir={d / 'apiserver'}",
                f"--service-account-private-key-file={sa_key}",
                f"--root-ca-file={ca_file}",
                f"--feature-gates={FEATURE_GATES}",
                "--kube-api-qps=200",
                "--kube-api-burst=400",
            ],
        )
        launch(
            "kube-scheduler",
            [
                str(bin_dir / "kube-scheduler"),
                f"--kubeconfig={admin_kubeconfig}",
                "--leader-elect=false",
                "--bind-address=127.0.0.1",
                f"--secure-port={ports['scheduler']}",
                f"--cert-dir={d / 'apiserver'}",
                f"--feature-gates={FEATURE_GATES}",
            ],
        )
        node_stages = [assets / "node-initialize.yaml", assets / "node-heartbeat-with-lease.yaml"]
        kwokconfig.write_gpu_config(d / "kwok.yaml", node_stages, d / "logs" / "simulated-pod.log")
        # One kwok simulates the GPU nodes and their pods; a second one only keeps the
        # runner nodes alive, behind the pod runner's kubelet endpoint.
        launch(
            "kwok",
            _kwok_argv(
                bin_dir,
                admin_kubeconfig,
                d / "kwok.yaml",
                f"{manifests.RUNNER_LABEL}!=true",
                ports["kwok"],
                ports["kwok"],
                serving_cert,
                serving_key,
            ),
        )
        if runner_nodes:
            kwokconfig.write_runner_config(d / "kwok-runner.yaml", node_stages)
            launch(
                "kwok-runner",
                _kwok_argv(
                    bin_dir,
                    admin_kubeconfig,
                    d / "kwok-runner.yaml",
                    f"{manifests.RUNNER_LABEL}=true",
                    ports["runner-kubelet"],
                    ports["kwok-runner"],
                    serving_cert,
                    serving_key,
                    "--enable-crds=PortForward",
                ),
            )

        nodes: list[dict[str, Any]] = []
        if options.gpu_pool:
            nodes += manifests.nodes(options.gpu_pool)
        if options.runner_pool:
            nodes += manifests.nodes(options.runner_pool, runner=True)
        kube.apply(api, nodes)
        if volcano_dir is not None:
            self._start_volcano(
                api,
                volcano_dir,
                volcano_crds,
                ports,
                ca,
                admin_kubeconfig,
                launch,
                options.volcano_schedule_period,
            )
        if kueue_dirs is not None:
            kueue.start(api, d, *kueue_dirs, kueue_crds, ports, ca, admin_kubeconfig, launch)
        if hived_dir is not None:
            kube.apply(api, hived.priority_classes())
            hived.write(
                d / "hived" / "hivedscheduler.yaml",
                hived.config(
                    admin_kubeconfig, ports["hived"], options.gpu_pool, options.runner_pool
                ),
            )
            launch(
                "hivedscheduler",
                hived.hived_argv(hived_dir / "bin" / "hivedscheduler"),
                cwd=d / "hived",
            )
            config = hived.write(
                d / "hived" / "scheduler.yaml",
                hived.scheduler_config(admin_kubeconfig, ports["hived"]),
            )
            launch(
                "hived-kube-scheduler",
                hived.scheduler_argv(
                    bin_dir / "kube-scheduler", config, ports["hived-scheduler"], d / "apiserver"
                ),
            )
        core = kube.core(api)
        processes.wait_until(
            lambda: _ready_nodes(core) >= set(gpu_nodes + runner_nodes),
            120,
            "nodes Ready (kwok)",
            alive=died,
        )
        processes.wait_until(
            lambda: all(_has_default_sa(core, ns) for ns in manifests.NAMESPACES),
            60,
            "default service accounts",
            alive=died,
        )
        for name in ("controller-manager", "scheduler"):
            url = f"https://127.0.0.1:{ports[name]}/healthz"
            processes.wait_until(
                lambda url=url: _http_get(url) == b"ok",  # type: ignore[misc]
                60,
                f"kube-{name} /healthz",
                alive=died,
            )
        if volcano_dir is not None:
            _wait_volcano(api, ports, died)
        if kueue_dirs is not None:
            kueue.wait(api, ports, died)
        if hived_dir is not None:
            processes.wait_until(
                lambda: hived.vcs_served(ports["hived"]), 60, "HiveD's VCs served", alive=died
            )
            url = f"https://127.0.0.1:{ports['hived-scheduler']}/healthz"
            processes.wait_until(
                lambda: _http_get(url) == b"ok", 60, "hived-kube-scheduler /healthz", alive=died
            )
        if runner_nodes:
            env = dict(os.environ)
            env["PYTHONPATH"] = os.pathsep.join(
                [str(REPO_ROOT), *filter(None, [env.get("PYTHONPATH")])]
            )
            launch(
                "pod-runner",
                [
                    sys.executable,
                    "-m",
                    "tests.cluster.runner",
                    f"--dir={d}",
                    f"--kubeconfig={admin_kubeconfig}",
                    f"--pod-net={runner_pod_net()}",
                    f"--kubelet-port={ports['runner-kubelet']}",
                    f"--kwok-port={ports['kwok-runner']}",
                    f"--cert={serving_cert}",
                    f"--key={serving_key}",
                    "--nodes",
                    *runner_nodes,
                ],
                env=env,
                cwd=REPO_ROOT,
                # SIGTERM: the runner stops its pods and cleans /etc/hosts first.
                death_signal=signal.SIGTERM,
            )
            ready_file = d / "runner" / "ready"
            processes.wait_until(ready_file.is_file, 60, "pod runner", alive=died)
        return state

    def _start_volcano(
        self,
        api: Any,
        volcano_dir: Path,
        crds: list[dict[str, Any]],
        ports: dict[str, int],
        ca: tuple[Any, Any],
        kubeconfig: Path,
        launch: Callable[[str, list[str]], None],
        schedule_period: str | None = None,
    ) -> None:
        """Admission policies and webhook configurations (which vc-webhook-manager waits
        for), then the three components. `_wait_volcano` waits for them."""
        d = self.directory
        pki_dir = d / "pki"
        cert, key = pki.make_serving_cert(
            pki_dir, "volcano-admission", ca, ["127.0.0.1", "localhost"]
        )
        ca_file = pki_dir / "ca.crt"
        processes.wait_until(
            lambda: kube.crds_established(api, crds),
            60,
            "Volcano CRDs established",
        )
        kube.apply(api, [manifests.namespace(volcano.NAMESPACE), volcano.controller_configmap()])
        kube.apply(api, volcano.admission_policies(volcano_dir))
        kube.apply(
            api,
            volcano.webhook_configurations(
                f"https://127.0.0.1:{ports['vc-webhook']}", ca_file.read_bytes()
            ),
        )
        bin_dir = volcano_dir / "bin"
        launch(
            "vc-webhook-manager",
            volcano.webhook_manager_argv(
                volcano_dir,
                kubeconfig,
                ports["vc-webhook"],
                ports["vc-webhook-healthz"],
                cert,
                key,
                ca_file,
            ),
        )
        launch(
            "vc-controller-manager",
            volcano.controller_manager_argv(
                bin_dir,
                kubeconfig,
                ports["vc-controller-manager"],
                ports["vc-controller-manager-healthz"],
            ),
        )
        conf = volcano.write_scheduler_conf(d / "volcano" / "scheduler.conf")
        launch(
            "vc-scheduler",
            volcano.scheduler_argv(
                bin_dir,
                kubeconfig,
                conf,
                ports["vc-scheduler"],
                ports["vc-scheduler-healthz"],
                d / "volcano",
                schedule_period,
            ),
        )


def _wait_volcano(api: Any, ports: dict[str, int], died: Callable[[], str | None]) -> None:
    """Each component's /healthz, then the queues: creating them passes through the
    queue webhooks, so it succeeds only once vc-webhook-manager serves; they count as
    ready when vc-controller-manager has opened them."""
    healthz = {  # the webhook manager serves its health check with its TLS certificate
        "vc-webhook-manager": f"https://127.0.0.1:{ports['vc-webhook-healthz']}",
        "vc-controller-manager": f"http://127.0.0.1:{ports['vc-controller-manager-healthz']}",
        "vc-scheduler": f"http://127.0.0.1:{ports['vc-scheduler-healthz']}",
    }
    for name, base in healthz.items():
        url = f"{base}/healthz"
        processes.wait_until(
            lambda url=url: _http_get(url) == b"ok",  # type: ignore[misc]
            60,
            f"{name} /healthz",
            alive=died,
        )
    queues = manifests.volcano_queues()

    def created() -> bool:
        kube.apply(api, queues)
        return True

    processes.wait_until(
        created,
        60,
        "Volcano queues created (through vc-webhook-manager)",
        interval=0.5,
        alive=died,
    )
    custom = kube.custom(api)

    def opened() -> bool:
        return all(
            custom.get_cluster_custom_object(
                "scheduling.volcano.sh", "v1beta1", "queues", q["metadata"]["name"]
            )
            .get("status", {})
            .get("state")
            == "Open"
            for q in queues
        )

    processes.wait_until(opened, 60, "Volcano queues Open", alive=died)


def _apiserver_ready(state: State) -> Callable[[], bool]:
    ca_file = Path(state.directory) / "pki" / "ca.crt"
    return lambda: _http_get(f"{state.server}/readyz", ca_file, state.tokens["admin"]) == b"ok"


def _etcd_ready(state: State) -> Callable[[], bool]:
    argv = state.processes["etcd"]["argv"]
    url = next(a.split("=", 1)[1] for a in argv if a.startswith("--listen-client-urls="))
    return lambda: b'"health":"true"' in _http_get(f"{url}/health")


def _healthy(name: str) -> Callable[[State], Callable[[], bool]]:
    """A controller's health check, from its argv: Volcano's ``--healthz-address``, or the
    ``healthProbeBindAddress`` of the config file a controller-runtime manager reads."""

    def ready(state: State) -> Callable[[], bool]:
        argv = state.processes[name]["argv"]
        flags = dict(a[2:].split("=", 1) for a in argv if a.startswith("--") and "=" in a)
        if "healthz-address" in flags:
            url = f"http://{flags['healthz-address']}/healthz"
        else:
            config = yaml.safe_load(Path(flags["config"]).read_text())
            url = f"http://{config['health']['healthProbeBindAddress']}/readyz"
        return lambda: _http_get(url) == b"ok"

    return ready


# Processes `start_process` can start again, with their readiness check.
RESTARTABLE: dict[str, Callable[[State], Callable[[], bool]]] = {
    "kube-apiserver": _apiserver_ready,
    "etcd": _etcd_ready,
    **{
        name: _healthy(name)
        for name in ("vc-controller-manager", "vc-scheduler", "kueue-manager", "jobset-manager")
    },
}


def _kwok_argv(
    bin_dir: Path,
    kubeconfig: Path,
    config: Path,
    node_selector: str,
    node_port: int,
    server_port: int,
    cert: Path,
    key: Path,
    *extra: str,
) -> list[str]:
    """kwok managing the nodes that match a label selector. `node_port` is the kubelet
    port the nodes advertise, `server_port` where kwok's own server listens."""
    return [
        str(bin_dir / "kwok"),
        f"--kubeconfig={kubeconfig}",
        f"--config={config}",
        "--manage-all-nodes=false",
        f"--manage-nodes-with-label-selector={node_selector}",
        f"--cidr={KWOK_POD_CIDR}",
        "--node-ip=127.0.0.1",
        f"--node-port={node_port}",
        f"--server-address=127.0.0.1:{server_port}",
        f"--tls-cert-file={cert}",
        f"--tls-private-key-file={key}",
        "--node-lease-duration-seconds=40",
        *extra,
    ]


def _http_get(url: str, ca_file: Path | None = None, token: str | None = None) -> bytes:
    if ca_file is None:
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE  # components' self-signed health endpoints
    else:
        context = ssl.create_default_context(cafile=str(ca_file))
    request = urllib.request.Request(url)
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    with urllib.request.urlopen(request, timeout=5, context=context) as response:
        return bytes(response.read())


def _yaml_documents(paths: list[Path]) -> list[dict[str, Any]]:
    return [doc for path in paths for doc in yaml.safe_load_all(path.read_text()) if doc]


def _ready_nodes(core: Any) -> set[str]:
    ready = set()
    for item in core.list_node().items:
        for condition in item.status.conditions or []:
            if condition.type == "Ready" and condition.status == "True":
                ready.add(item.metadata.name)
    return ready


def _has_default_sa(core: Any, namespace: str) -> bool:
    core.read_namespaced_service_account("default", namespace)
    return True
