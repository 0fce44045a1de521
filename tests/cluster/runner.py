"""The pod runner: pods bound to runner nodes really run, as local processes.

It watches pods on its nodes, gives each a loopback pod IP, runs each container's
command with the pod's environment in a directory per pod, writes the output as CRI
logs that it serves as the runner nodes' kubelet endpoint (kubeletproxy), exposes
declared container ports to port-forward (a kwok `PortForward` object per pod, served
by the runner nodes' own kwok behind that endpoint), and reports the pod's life in its
status. Deleting the pod stops its processes (SIGTERM,
then SIGKILL after the grace period) and, as kubelet does, removes the pod a moment after
they have exited. kwok's Stages leave these pods alone.

Run by `up` as `python -m tests.cluster.runner`; one thread handles every event, so the
bookkeeping needs no locks.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import logging
import os
import pwd
import queue
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kubernetes import client, watch
from kubernetes.client.exceptions import ApiException

from . import crilog, hostsfile, kube, podenv, processes
from .kubeletproxy import KubeletProxy, LogSource

log = logging.getLogger("pod-runner")
_Watch: Any = watch.Watch
Obj = dict[str, Any]
KWOK_GROUP, KWOK_VERSION = "kwok.x-k8s.io", "v1alpha1"
# JSON {mountPath: local folder} of a container's claim volumes (README: volumes).
MOUNTS_ENV = "JUPYTER_PAI_TEST_MOUNTS"
#: How long a deleted pod stays once its containers have exited. Kubelet removes it only
#: after tearing down its volumes and writing its final status, so its log stays readable
#: a moment after the container's end (which jupyter-pai's log archive relies on).
REMOVAL_DELAY_SECONDS = 0.5
#: An event handled or kept waiting longer than this is logged: it held up every pod.
SLOW_EVENT_SECONDS = 2.0
#: How long a container's output may stay open after its process has exited (a process
#: it left behind may hold it) before its exit is reported without the rest.
OUTPUT_CLOSE_SECONDS = 5.0
#: How often the runner lists its nodes' pods again.
RELIST_SECONDS = 60
#: A removal the API server did not take is tried again after this long.
REMOVAL_RETRY_SECONDS = 1.0
# Marks a container's processes (and what they leave running) for `_end_leftovers`.
CONTAINER_ENV = "JUPYTER_PAI_TEST_CONTAINER"


def _brief(payload: tuple[Any, ...]) -> str:
    """An event's payload for the log: a pod as its namespace/name, not its whole object."""
    parts = []
    for item in payload:
        meta = item.get("metadata") if isinstance(item, dict) else None
        parts.append(f"{meta.get('namespace')}/{meta.get('name')}" if meta else str(item))
    return " ".join(parts)


def _unstarted_statuses(pod: Obj, state: Obj) -> list[Obj]:
    """Each container's status, in ``state``, for a pod whose containers never started."""
    return [
        {
            "name": c["name"],
            "image": c.get("image", ""),
            "imageID": "",
            "ready": False,
            "restartCount": 0,
            "started": False,
            "state": state,
        }
        for c in pod["spec"]["containers"]
    ]


def container_id(pod_uid: str, container: str) -> str:
    return f"{pod_uid}/{container}"


# Read-only claim mounts are enforced by a bind mount in a private mount namespace,
# which needs root and util-linux's unshare; otherwise they are plain symlinks.
def _can_bind() -> bool:
    try:
        return subprocess.run(["unshare", "--mount", "true"], capture_output=True).returncode == 0
    except OSError:
        return False


BIND_READ_ONLY = _can_bind()
# Where ssh and sshd look for the account's keys and config (its passwd home, not $HOME):
# in a pod's namespace, the pod's own `<pod dir>/.ssh` (README: private mounts).
ACCOUNT_SSH_DIR = Path(pwd.getpwuid(os.getuid()).pw_dir) / ".ssh"


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class Container:
    name: str
    image: str
    argv: list[str]
    env: dict[str, str]
    log: crilog.CriLogWriter
    proc: subprocess.Popen[bytes] | None = None
    started_at: str = ""
    exit_code: int | None = None
    finished_at: str = ""
    restarts: int = 0
    last_exit: Obj | None = None
    final: bool = False  # exited and will not restart: a log follower may stop

    @property
    def running(self) -> bool:
        return self.exit_code is None


@dataclass
class PodRun:
    uid: str
    namespace: str
    name: str
    ip: str
    # The pod's own loopback: what 127.0.0.1 is inside a real pod's network namespace
    # (port-forwards connect there); other pods reach the pod at ``ip`` only.
    loopback: str
    workdir: Path
    restart_policy: str
    grace: int
    containers: dict[str, Container] = field(default_factory=dict)
    hostnames: list[str] = field(default_factory=list)
    start_time: str = ""
    deleting: bool = False
    finished: bool = False
    held: bool = False  # deleted while a finalizer holds it: its final phase is written

    @property
    def running(self) -> bool:
        """Whether any of its containers is running."""
        return any(c.running for c in self.containers.values())


class Runner:
    def __init__(self, directory: Path, kubeconfig: Path, pod_net: str, nodes: list[str]) -> None:
        self.directory = directory
        self.kubeconfig = kubeconfig
        self.pod_net = pod_net
        self.nodes = nodes
        self.api = kube.api_client(kubeconfig)
        self.core = kube.core(self.api)
        self.custom = kube.custom(self.api)
        self.lookup = podenv.api_lookup(self.core)
        # (kind, payload, when posted): `run` handles each as `_on_<kind>(*payload)`.
        self.events: queue.Queue[tuple[str, tuple[Any, ...], float]] = queue.Queue()
        self.pods: dict[str, PodRun] = {}
        # (namespace, name) -> run, read by the kubelet proxy's threads (single dict
        # operations are atomic, iteration is not).
        self.by_name: dict[tuple[str, str], PodRun] = {}
        self.next_ip = 1
        self.marker = hostsfile.marker(directory)
        self.apiserver_port = str(self.api.configuration.host.rsplit(":", 1)[1])

    # -- main loop --------------------------------------------------------------------

    def log_source(
        self, namespace: str, pod: str, container: str, previous: bool = False
    ) -> LogSource | None:
        run = self.by_name.get((namespace, pod))
        item = run.containers.get(container) if run else None
        if run is None or item is None:
            return None
        if previous:  # the last terminated instance, kept as a kubelet keeps it
            return LogSource(path=run.workdir / f"{container}.previous.log", done=lambda: True)
        return LogSource(path=run.workdir / f"{container}.log", done=lambda: item.final)

    def run(self) -> None:
        for node in self.nodes:
            threading.Thread(target=self._watch, args=(node,), daemon=True).start()
        ready = self.directory / "runner" / "ready"
        ready.parent.mkdir(parents=True, exist_ok=True)
        ready.write_text(str(os.getpid()))
        while True:
            kind, payload, posted = self.events.get()
            if kind == "stop":
                break
            began = time.monotonic()
            try:
                getattr(self, f"_on_{kind}")(*payload)
            except Exception:  # one bad pod must not stop the runner
                log.exception("handling %s %s failed", kind, _brief(payload))
            took = time.monotonic() - began
            # A slow step holds up every pod's events: the log says which it was.
            if took > SLOW_EVENT_SECONDS or began - posted > SLOW_EVENT_SECONDS:
                log.warning(
                    "%s %s: waited %.1fs in the queue (%d behind it), handled in %.1fs",
                    kind,
                    _brief(payload),
                    began - posted,
                    self.events.qsize(),
                    took,
                )
        self._shutdown()

    def stop(self) -> None:
        self._post("stop")

    def _post(self, kind: str, *payload: Any) -> None:
        """Queue the event ``kind``, handled by ``_on_<kind>(*payload)`` on the main loop."""
        self.events.put((kind, payload, time.monotonic()))

    def _watch(self, node: str) -> None:
        api = kube.api_client(self.kubeconfig)
        core = kube.core(api)
        selector = f"spec.nodeName={node}"
        while True:
            try:
                listing = core.list_pod_for_all_namespaces(field_selector=selector)
                for pod in listing.items:
                    self._post("pod", "ADDED", api.sanitize_for_serialization(pod))
                stream = _Watch().stream(
                    core.list_pod_for_all_namespaces,
                    field_selector=selector,
                    resource_version=listing.metadata.resource_version,
                    # Listed again each minute, as a kubelet syncs its pods: a step that
                    # failed (a removal the API server did not take) is taken again.
                    timeout_seconds=RELIST_SECONDS,
                )
                for event in stream:
                    pod = api.sanitize_for_serialization(event["object"])
                    self._post("pod", event["type"], pod)
            except Exception as error:  # 410 Gone, a dropped connection: list again
                log.info("watch on %s restarts: %s", node, error)
                time.sleep(1)

    # -- pod events -------------------------------------------------------------------

    def _on_pod(self, kind: str, pod: Obj) -> None:
        meta = pod["metadata"]
        uid = meta["uid"]
        run = self.pods.get(uid)
        if kind == "DELETED":
            if run is not None:
                self._kill(run, signal.SIGKILL)
                self._forget(run)
            return
        if meta.get("deletionTimestamp"):
            if run is not None and run.deleting:
                return  # stopping: removed once its containers have exited
            if run is not None and run.running:
                run.deleting = True
                run.held = bool(meta.get("finalizers"))
                given = meta.get("deletionGracePeriodSeconds")
                grace = run.grace if given is None else given
                log.info("%s/%s deleted: SIGTERM, SIGKILL in %ss", run.namespace, run.name, grace)
                self._kill(run, signal.SIGTERM)
                self._later(grace, "deadline", uid)
                return
            # Nothing of it runs here (never started, or ended): final phase, then removal.
            if meta.get("finalizers"):
                self._end_phase(pod, run)
            self._finish_delete(pod, run)
            return
        phase = (pod.get("status") or {}).get("phase", "Pending")
        if run is None and phase == "Pending":
            self._start(pod)

    def _on_retry(self, namespace: str, name: str, uid: str) -> None:
        if uid in self.pods:
            return
        try:
            pod = self.api.sanitize_for_serialization(
                self.core.read_namespaced_pod(name, namespace)
            )
        except ApiException:
            return  # gone
        meta = pod["metadata"]
        if meta["uid"] == uid and not meta.get("deletionTimestamp"):
            self._start(pod)

    def _on_deadline(self, uid: str) -> None:
        run = self.pods.get(uid)
        if run is not None and run.running:
            log.info("%s/%s: grace period over, SIGKILL", run.namespace, run.name)
            self._kill(run, signal.SIGKILL)

    def _on_exit(self, uid: str, name: str, code: int) -> None:
        run = self.pods.get(uid)
        if run is None:
            return
        container = run.containers[name]
        container.exit_code, container.finished_at = code, _now()
        log.info("%s/%s: %s exited %d", run.namespace, run.name, name, code)
        policy = run.restart_policy
        if not run.deleting and (policy == "Always" or (policy == "OnFailure" and code != 0)):
            container.last_exit = self._terminated(container)
            delay = min(30.0, 2.0**container.restarts)
            container.restarts += 1
            self._later(delay, "restart", uid, name)
            self._patch_status(run)
            return
        container.final = True
        if run.running:
            self._patch_status(run)
            return
        if run.deleting:
            if run.held:
                self._end_phase(None, run)
            self._later(REMOVAL_DELAY_SECONDS, "remove", uid)
        else:
            run.finished = True
            self._patch_status(run)
            self._update_hosts()

    def _later(self, delay: float, kind: str, *payload: str) -> None:
        """Post the event ``kind`` (handled by ``_on_<kind>(*payload)``) after ``delay`` s."""
        timer = threading.Timer(delay, self._post, args=(kind, *payload))
        timer.daemon = True
        timer.start()

    def _on_remove(self, uid: str) -> None:
        run = self.pods.get(uid)
        if run is not None:
            self._finish_delete(None, run)

    def _on_restart(self, uid: str, name: str) -> None:
        run = self.pods.get(uid)
        if run is not None and not run.deleting:
            # Each instance of a container gets a log of its own; the one before is kept
            # for `previous=true` (a kubelet keeps one terminated instance too).
            container = run.containers[name]
            container.log.close()
            current = run.workdir / f"{name}.log"
            current.replace(run.workdir / f"{name}.previous.log")
            container.log = crilog.CriLogWriter(current)
            self._spawn(run, container)
            self._patch_status(run)

    # -- starting and stopping --------------------------------------------------------

    def _allocate_ip(self) -> str:
        used = {a for run in self.pods.values() for a in (run.ip, run.loopback)}
        while True:
            n, self.next_ip = self.next_ip, self.next_ip % 65000 + 1
            ip = f"{self.pod_net}.{n >> 8}.{n & 255}"
            if ip not in used and n & 255 not in (0, 255):
                return ip

    def _start(self, pod: Obj) -> None:
        meta, spec = pod["metadata"], pod["spec"]
        ip = self._allocate_ip()
        loopback = self._allocate_ip()
        pod.setdefault("status", {}).update(
            podIP=ip, podIPs=[{"ip": ip}], hostIP="127.0.0.1", hostIPs=[{"ip": "127.0.0.1"}]
        )
        pod_dir = f"{meta['namespace']}_{meta['name']}_{meta['uid'][:8]}"
        workdir = self.directory / "runner" / "pods" / pod_dir
        workdir.mkdir(parents=True, exist_ok=True)
        run = PodRun(
            uid=meta["uid"],
            namespace=meta["namespace"],
            name=meta["name"],
            ip=ip,
            loopback=loopback,
            workdir=workdir,
            restart_policy=spec.get("restartPolicy", "Always"),
            grace=int(spec.get("terminationGracePeriodSeconds") or 30),
            hostnames=hostsfile.pod_names(
                meta["name"], meta["namespace"], spec.get("hostname"), spec.get("subdomain")
            ),
            start_time=_now(),
        )
        try:
            claims = self._claim_folders(pod)
            projected = self._file_volume_folders(pod, workdir)
            for item in spec["containers"]:
                env = (
                    self._base_env(pod, run)
                    | podenv.gpu_env(pod)
                    | podenv.container_env(pod, item, self.lookup)
                )
                argv = podenv.container_argv(item, env)
                mounts, read_only = self._mount_views(workdir, item, claims)
                env[MOUNTS_ENV] = json.dumps(mounts)
                env[CONTAINER_ENV] = container_id(meta["uid"], item["name"])
                run.containers[item["name"]] = Container(
                    name=item["name"],
                    image=item.get("image", ""),
                    argv=self._wrap_namespace(
                        podenv.rewrite_mounts(argv, mounts),
                        read_only,
                        workdir,
                        item["name"],
                        at_mount_path=self._real_mount_paths(mounts, workdir),
                        projected=self._projected_mounts(run, item, projected),
                    ),
                    env=env,
                    log=crilog.CriLogWriter(workdir / f"{item['name']}.log"),
                )
        except (podenv.EnvError, ApiException) as error:
            for made in run.containers.values():
                made.log.close()
            self._config_error(pod, str(error))
            # Retried, as a kubelet does: the ConfigMap or Secret may come later.
            retry = (meta["namespace"], meta["name"], meta["uid"])
            self._later(2.0, "retry", *retry)
            return
        self.pods[run.uid] = run
        self.by_name[(run.namespace, run.name)] = run
        self._create_port_forwards(pod, run)
        if spec.get("initContainers"):
            log.warning("%s/%s: init containers are not run", run.namespace, run.name)
        log.info("%s/%s starts at %s", run.namespace, run.name, run.ip)
        for container in run.containers.values():
            self._spawn(run, container)
        self._patch_status(run)
        self._update_hosts()

    # -- volumes: claims as local folders -------------------------------------------------

    def _claim_folders(self, pod: Obj) -> dict[str, tuple[Path, bool]]:
        """Volume name -> (the bound PV's local folder, claim readOnly), for every
        persistentVolumeClaim volume; an unbound claim or a PV that is no local folder
        leaves the pod Pending (retried), as a kubelet waits for its volumes."""
        namespace = pod["metadata"]["namespace"]
        out: dict[str, tuple[Path, bool]] = {}
        for volume, (claim_name, read_only) in podenv.claim_volumes(pod).items():
            try:
                claim = self.core.read_namespaced_persistent_volume_claim(claim_name, namespace)
            except ApiException as error:
                if error.status == 404:
                    raise podenv.EnvError(
                        f"persistentvolumeclaim {claim_name!r} not found"
                    ) from None
                raise
            pv_name = claim.spec.volume_name
            if not pv_name or (claim.status and claim.status.phase) != "Bound":
                raise podenv.EnvError(f"persistentvolumeclaim {claim_name!r} is not bound")
            pv = self.core.read_persistent_volume(pv_name).spec
            local = (pv.host_path and pv.host_path.path) or (pv.local and pv.local.path)
            if not local or not Path(local).is_dir():
                raise podenv.EnvError(f"volume {pv_name!r} is no folder on this host")
            out[volume] = (Path(local), read_only)
        return out

    # -- volumes kubelet writes: the service account's, ConfigMaps, Secrets ------------

    def _file_volume_folders(self, pod: Obj, workdir: Path) -> dict[str, Path]:
        """Volume name -> `<pod dir>/projected/<volume>`, holding what kubelet writes into
        the pod's projected, ConfigMap and Secret volumes: for the service account's, a
        token from the TokenRequest API for the pod's service account, bound to the pod
        (it stops working once the pod is gone), the cluster CA and the namespace. Not refreshed: the API server issues these tokens for
        a year (`--service-account-extend-token-expiration`, on by default), far past a
        test's pod."""
        meta = pod["metadata"]
        account = pod["spec"].get("serviceAccountName") or "default"

        def token(audience: str | None, seconds: int) -> str:
            spec: Obj = {
                "expirationSeconds": seconds,
                "boundObjectRef": {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "name": meta["name"],
                    "uid": meta["uid"],
                },
            }
            if audience:  # else the API server's own audiences, as kubelet leaves it
                spec["audiences"] = [audience]
            answer = self.core.create_namespaced_service_account_token(
                account, meta["namespace"], {"spec": spec}
            )
            return str(answer.status.token)

        out: dict[str, Path] = {}
        for volume, sources in podenv.file_volumes(pod).items():
            folder = workdir / "projected" / volume
            folder.mkdir(parents=True, exist_ok=True)
            for rel, text in podenv.projected_files(pod, sources, self.lookup, token).items():
                target = folder / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(text)
            out[volume] = folder
        return out

    @staticmethod
    def _projected_mounts(
        run: PodRun, container: Obj, folders: dict[str, Path]
    ) -> dict[Path, Path]:
        """mountPath -> folder, for the container's mounts of those volumes (the admission
        plugin mounts the service account's at /var/run/secrets/kubernetes.io/serviceaccount,
        where the client libraries' in-cluster configuration reads). They exist only in the
        process's own mount namespace; the mount point is made on the host if missing
        (an empty folder, left there). Without bind mounts (not root), nothing."""
        mounts = {
            Path(m["mountPath"]): folders[m["name"]]
            for m in container.get("volumeMounts") or []
            if m["name"] in folders
        }
        if mounts and not BIND_READ_ONLY:
            log.warning(
                "%s/%s: no token, ConfigMap or Secret volumes (no unshare as root)",
                run.namespace,
                run.name,
            )
            return {}
        for target in mounts:
            target.mkdir(parents=True, exist_ok=True)
        return mounts

    def _mount_views(
        self, workdir: Path, container: Obj, claims: dict[str, tuple[Path, bool]]
    ) -> tuple[dict[str, str], dict[Path, Path]]:
        """mountPath -> the folder the process uses for it (`<pod dir>/volumes/<container>/
        <volume>`: a symlink to the PV's folder, or an empty directory that a read-only
        mount is bound onto in the process's own mount namespace), and the read-only
        views -> their source folders."""
        mounts: dict[str, str] = {}
        read_only: dict[Path, Path] = {}
        for mount in container.get("volumeMounts") or []:
            if mount["name"] not in claims:
                continue  # emptyDir, configMap, …: not done
            source, claim_ro = claims[mount["name"]]
            view = workdir / "volumes" / container["name"] / mount["name"]
            view.parent.mkdir(parents=True, exist_ok=True)
            if (claim_ro or mount.get("readOnly")) and BIND_READ_ONLY:
                view.mkdir(exist_ok=True)
                read_only[view] = source
            elif not view.is_symlink():
                if claim_ro or mount.get("readOnly"):
                    log.warning("%s: read-only not enforced (no unshare as root)", view)
                view.symlink_to(source, target_is_directory=True)
            mounts[mount["mountPath"]] = str(view)
        return mounts, read_only

    @staticmethod
    def _real_mount_paths(mounts: dict[str, str], workdir: Path) -> dict[Path, Path]:
        """mountPath -> view, for the claim mounts that are also bound at their own path in
        the process's namespace, so that a path inside a shell command string or a file
        (`bash -c "cd /storage && …"`) reaches the volume as in a container. The mount
        point is made on the host if missing (an empty folder, left there: removing it
        would detach the mount from pods still using it). Not `/` nor a folder holding the
        pod's own: binding over those would hide the pod from itself."""
        if not BIND_READ_ONLY:
            return {}
        out: dict[Path, Path] = {}
        for mount_path, view in mounts.items():
            target = Path(mount_path)
            if target == Path("/") or workdir.is_relative_to(target):
                continue
            target.mkdir(parents=True, exist_ok=True)
            out[target] = Path(view)
        return out

    @staticmethod
    def _wrap_namespace(
        argv: list[str],
        read_only: dict[Path, Path],
        workdir: Path,
        name: str,
        at_mount_path: dict[Path, Path] | None = None,
        projected: dict[Path, Path] | None = None,
    ) -> list[str]:
        """The command run in a mount namespace of its own (as root with unshare), as a
        container has a filesystem of its own: read-only claim views bound read-only, each
        claim's view bound at its mountPath too (`at_mount_path`), the service account
        folders at theirs, read-only (`projected`: mountPath -> folder), and the account's
        `~/.ssh` replaced by the pod's `<pod dir>/.ssh`. The mounts vanish with its last
        process, so none outlives the pod and the host never sees them. The namespace's
        id goes to `<pod dir>/<container>.mntns` for `_end_leftovers`."""
        if not argv or not BIND_READ_ONLY:
            return argv
        private_ssh = workdir / ".ssh"
        private_ssh.mkdir(mode=0o700, exist_ok=True)
        ACCOUNT_SSH_DIR.mkdir(mode=0o700, exist_ok=True)  # a mount point must exist
        binds = [(src, dst, True) for dst, src in read_only.items()]
        # After the read-only binds, whose views they bind on again, read-only as well.
        binds += [
            (view, target, view in read_only) for target, view in (at_mount_path or {}).items()
        ]
        binds += [(folder, target, True) for target, folder in (projected or {}).items()]
        binds.append((private_ssh, ACCOUNT_SSH_DIR, False))
        script = 'set -e\nreadlink /proc/self/ns/mnt >"$NSFILE"\n'
        pairs = [f"NSFILE={workdir / f'{name}.mntns'}"]
        for i, (src, dst, ro) in enumerate(binds):
            script += f'mount --bind "$SRC{i}" "$DST{i}"\n'
            if ro:
                script += f'mount -o remount,bind,ro "$DST{i}"\n'
            pairs += [f"SRC{i}={src}", f"DST{i}={dst}"]
        script += 'exec "$@"\n'
        return [
            "env",
            *pairs,
            "unshare",
            "--mount",
            "--propagation",
            "private",
            "--",
            "sh",
            "-c",
            script,
            "sh",
            *argv,
        ]

    @staticmethod
    def _end_leftovers(run: PodRun, container: Container, pid: int) -> None:
        """When a container's command exits, a container runtime ends whatever it left
        running (a daemon such as sshd, a `cmd &`): SIGKILL to its process group and to
        every process that carries the container's id in its environment or sits in its
        mount namespace. A process marked as another container's is spared even there: a
        namespace's id is reused once its last process is gone, and another pod's new
        namespace may get it (sshd rewrites its environment for its title, so the
        namespace is what finds it)."""
        mine = f"{CONTAINER_ENV}={container_id(run.uid, container.name)}".encode() + b"\0"
        anyone = CONTAINER_ENV.encode() + b"="
        ns_file = run.workdir / f"{container.name}.mntns"
        ns = ns_file.read_text().strip() if ns_file.exists() else ""
        for _ in range(3):  # again, for what was forked meanwhile
            found = False
            for entry in Path("/proc").iterdir():
                if not entry.name.isdigit() or int(entry.name) == os.getpid():
                    continue
                with contextlib.suppress(OSError):
                    environ = (entry / "environ").read_bytes()
                    ours = mine in environ
                    in_ns = bool(ns) and os.readlink(entry / "ns" / "mnt") == ns
                    if ours or (in_ns and anyone not in environ):
                        os.kill(int(entry.name), signal.SIGKILL)
                        found = True
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)
                found = True
            if not found:
                return
            time.sleep(0.05)

    def _base_env(self, pod: Obj, run: PodRun) -> dict[str, str]:
        # The host's PATH with this interpreter first, so `python` in a pod is the
        # test session's Python (with the project installed).
        path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
        return {
            "PATH": path,
            "HOME": str(run.workdir),
            "LANG": os.environ.get("LANG", "C.UTF-8"),
            "HOSTNAME": pod["spec"].get("hostname") or run.name,
            "KUBERNETES_SERVICE_HOST": "127.0.0.1",
            "KUBERNETES_SERVICE_PORT": self.apiserver_port,
            # Pods here share the machine's network: what stands for the pod's 127.0.0.1.
            "JUPYTER_PAI_POD_LOOPBACK": run.loopback,
        }

    def _spawn(self, run: PodRun, container: Container) -> None:
        container.exit_code, container.started_at, container.finished_at = None, _now(), ""
        if not container.argv:
            # No command: the image's entrypoint is unknown here, so the container
            # idles (Running) until the pod is deleted.
            container.proc = None
            return
        try:
            proc = subprocess.Popen(
                container.argv,
                cwd=run.workdir,
                env=container.env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
                preexec_fn=processes.die_with_parent(),  # no pod outlives a killed runner
            )
        except OSError as error:
            container.log.write("stderr", f"exec {container.argv[0]}: {error}".encode())
            self._post("exit", run.uid, container.name, 127)
            return
        container.proc = proc
        pumps = [
            threading.Thread(target=container.log.pump, args=(stream, pipe), daemon=True)
            for stream, pipe in (("stdout", proc.stdout), ("stderr", proc.stderr))
        ]
        for pump in pumps:
            pump.start()

        def wait() -> None:
            code = proc.wait()
            self._end_leftovers(run, container, proc.pid)
            for pump in pumps:
                pump.join(OUTPUT_CLOSE_SECONDS)
                if pump.is_alive():
                    log.warning(
                        "%s/%s: %s's output is still open %.0fs after it exited",
                        run.namespace,
                        run.name,
                        container.name,
                        OUTPUT_CLOSE_SECONDS,
                    )
            # A signal death reads as 128+signal, as container runtimes report it.
            self._post("exit", run.uid, container.name, 128 - code if code < 0 else code)

        threading.Thread(target=wait, daemon=True).start()

    def _kill(self, run: PodRun, sig: signal.Signals) -> None:
        for container in run.containers.values():
            if container.running and container.proc is not None:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(container.proc.pid, sig)
            elif container.running and container.proc is None:
                # An idle container "exits" at once.
                self._post("exit", run.uid, container.name, 0)
                container.proc = None

    def _end_phase(self, pod: Obj | None, run: PodRun | None) -> None:
        """Write a deleted pod's final phase (Succeeded if every container exited 0, else
        Failed) before it is removed, as a kubelet does: the Job controller takes off its
        tracking finalizer only once a pod it did not delete itself has ended, and a pod
        kept by that finalizer would otherwise stay Terminating, and Running, for good.
        Only for a pod a finalizer holds: a pod that goes at once is removed as it is, as
        before (Volcano, in this cluster, took a reclaimed pod's final Failed for a failure
        of its task and ended the job)."""
        try:
            if run is not None and not run.finished:
                run.finished = True
                self._patch_status(run)
            elif run is None and pod is not None:
                meta = pod["metadata"]
                if (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed"):
                    # What a kubelet writes for containers it never started.
                    unknown = {
                        "exitCode": 137,
                        "reason": "ContainerStatusUnknown",
                        "message": "The container could not be located when the pod was deleted.",
                    }
                    statuses = _unstarted_statuses(pod, {"terminated": unknown})
                    status = {"phase": "Failed", "containerStatuses": statuses}
                    self.core.patch_namespaced_pod_status(
                        meta["name"], meta["namespace"], {"status": status}
                    )
        except Exception as error:  # removed all the same, as before
            name = run.name if run else pod["metadata"]["name"] if pod else "?"
            log.warning("%s: final phase not written: %s", name, error)

    def _finish_delete(self, pod: Obj | None, run: PodRun | None) -> None:
        name = pod["metadata"]["name"] if pod else run.name if run else ""
        namespace = pod["metadata"]["namespace"] if pod else run.namespace if run else ""
        uid = pod["metadata"]["uid"] if pod else run.uid if run else ""
        # Grace 0 already: the API server has removed it but for finalizers.
        removed = pod is not None and pod["metadata"].get("deletionGracePeriodSeconds") == 0
        if not removed:
            try:
                self.core.delete_namespaced_pod(
                    name,
                    namespace,
                    grace_period_seconds=0,
                    body=client.V1DeleteOptions(
                        grace_period_seconds=0, preconditions=client.V1Preconditions(uid=uid)
                    ),
                )
            except ApiException as error:  # gone already, or another pod by now (409)
                log.info("%s/%s removed before: %s", namespace, name, error.status)
            except Exception as error:  # the API server unreachable a moment: try again
                log.warning(
                    "%s/%s not removed (%s); again in %ss",
                    namespace,
                    name,
                    error,
                    REMOVAL_RETRY_SECONDS,
                )
                if run is not None:
                    self._later(REMOVAL_RETRY_SECONDS, "remove", uid)
                return
            else:
                log.info("%s/%s removed", namespace, name)
        if run is not None:
            self._forget(run)

    def _forget(self, run: PodRun) -> None:
        for container in run.containers.values():
            container.log.close()
        shutil.rmtree(run.workdir, ignore_errors=True)  # the pod and its logs are gone
        self.pods.pop(run.uid, None)
        if self.by_name.get((run.namespace, run.name)) is run:
            del self.by_name[(run.namespace, run.name)]
        self._update_hosts()

    def _shutdown(self) -> None:
        for run in self.pods.values():
            self._kill(run, signal.SIGTERM)
        deadline = time.monotonic() + 5
        for run in self.pods.values():
            for container in run.containers.values():
                if container.proc is not None:
                    with contextlib.suppress(subprocess.TimeoutExpired):
                        container.proc.wait(max(0.1, deadline - time.monotonic()))
            self._kill(run, signal.SIGKILL)
            # What a pod started into a session of its own (sshd) outlives its group: a
            # later session's pod would find its port taken.
            for container in run.containers.values():
                if container.proc is not None:
                    self._end_leftovers(run, container, container.proc.pid)
        hostsfile.remove_block(self.marker)

    # -- API writes -------------------------------------------------------------------

    def _update_hosts(self) -> None:
        entries = [
            (run.ip, run.hostnames)
            for run in self.pods.values()
            if run.hostnames and not run.finished
        ]
        hostsfile.set_block(self.marker, entries)

    def _create_port_forwards(self, pod: Obj, run: PodRun) -> None:
        meta = pod["metadata"]
        owner = [{"apiVersion": "v1", "kind": "Pod", "name": meta["name"], "uid": meta["uid"]}]
        metadata = {"name": meta["name"], "namespace": meta["namespace"], "ownerReferences": owner}
        forwards: list[Obj] = [
            {
                "ports": [p["containerPort"]],
                # As kubelet's: to the pod's loopback, not to its pod-network address.
                "target": {"address": run.loopback, "port": p["containerPort"]},
            }
            for item in pod["spec"]["containers"]
            for p in item.get("ports") or []
        ]
        if not forwards:
            return
        body = {
            "apiVersion": f"{KWOK_GROUP}/{KWOK_VERSION}",
            "kind": "PortForward",
            "metadata": metadata,
            "spec": {"forwards": forwards},
        }
        try:
            self.custom.create_namespaced_custom_object(
                KWOK_GROUP, KWOK_VERSION, meta["namespace"], "portforwards", body
            )
        except ApiException as error:
            if error.status != 409:
                raise

    def _terminated(self, container: Container) -> Obj:
        code = container.exit_code or 0
        return {
            "terminated": {
                "exitCode": code,
                "reason": "Completed" if code == 0 else "Error",
                "startedAt": container.started_at,
                "finishedAt": container.finished_at,
                "containerID": f"runner://{container.proc.pid if container.proc else 0}",
            }
        }

    def _container_status(self, container: Container) -> Obj:
        running = container.running
        status: Obj = {
            "name": container.name,
            "image": container.image,
            "imageID": "",
            "containerID": f"runner://{container.proc.pid if container.proc else 0}",
            "ready": running,
            "started": running,
            "restartCount": container.restarts,
            "state": (
                {"running": {"startedAt": container.started_at}}
                if running
                else self._terminated(container)
            ),
        }
        if container.last_exit:
            status["lastState"] = container.last_exit
        return status

    def _patch_status(self, run: PodRun) -> None:
        containers = list(run.containers.values())
        all_running = all(c.running for c in containers)
        if run.running or not run.finished:
            phase = "Running"
        else:
            phase = "Succeeded" if all(c.exit_code == 0 for c in containers) else "Failed"
        now = _now()
        ready = "True" if all_running else "False"
        status = {
            "phase": phase,
            "podIP": run.ip,
            "podIPs": [{"ip": run.ip}],
            "hostIP": "127.0.0.1",
            "hostIPs": [{"ip": "127.0.0.1"}],
            "startTime": run.start_time,
            "conditions": [
                {"type": "Initialized", "status": "True", "lastTransitionTime": now},
                {"type": "Ready", "status": ready, "lastTransitionTime": now},
                {"type": "ContainersReady", "status": ready, "lastTransitionTime": now},
            ],
            "containerStatuses": [self._container_status(c) for c in containers],
        }
        try:
            self.core.patch_namespaced_pod_status(run.name, run.namespace, {"status": status})
        except ApiException as error:
            if error.status != 404:
                raise

    def _config_error(self, pod: Obj, message: str) -> None:
        meta = pod["metadata"]
        waiting = {"reason": "CreateContainerConfigError", "message": message}
        statuses = _unstarted_statuses(pod, {"waiting": waiting})
        with contextlib.suppress(ApiException):
            self.core.patch_namespaced_pod_status(
                meta["name"],
                meta["namespace"],
                {"status": {"phase": "Pending", "containerStatuses": statuses}},
            )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m tests.cluster.runner")
    parser.add_argument("--dir", type=Path, required=True)
    parser.add_argument("--kubeconfig", type=Path, required=True)
    parser.add_argument("--pod-net", required=True, help="first two octets, e.g. 127.73")
    parser.add_argument("--nodes", nargs="+", required=True)
    parser.add_argument(
        "--kubelet-port", type=int, required=True, help="serve the nodes' kubelet API"
    )
    parser.add_argument("--kwok-port", type=int, required=True, help="the runner nodes' kwok")
    parser.add_argument("--cert", type=Path, required=True)
    parser.add_argument("--key", type=Path, required=True)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    runner = Runner(args.dir, args.kubeconfig, args.pod_net, args.nodes)
    KubeletProxy(args.kubelet_port, args.kwok_port, args.cert, args.key, runner.log_source).start()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: runner.stop())
    runner.run()


if __name__ == "__main__":
    main()
