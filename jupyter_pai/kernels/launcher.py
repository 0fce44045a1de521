"""The in-task (in-pod) kernel launcher: ``python -m jupyter_pai.kernels.launcher``.

It runs as the kernel job's only task and owns the job's life: it starts ipykernel on the
ports the job holds (label ``kernel``: shell, iopub, stdin, control, hb, then its own
control port), restarts it when the Jupyter server asks (the job and its GPUs stay), and
ends — freeing the GPUs — when told to, when stopped, or when no Jupyter server has
contacted it for ``--idle-seconds`` (a server that died strands no GPU).

Self-contained on purpose: it imports only the standard library, pyzmq and
jupyter_client (both come with ipykernel), so on Kubernetes any image with Python and
ipykernel runs it, shipped as source in the command (:func:`inline_command`).

The connection key comes from ``JUPYTER_PAI_KERNEL_KEY`` (the job's Secret) and reaches
ipykernel in a 0600 connection file: never in an argument list, never in the kernel's
environment. Where the process's own environment block holds a key (``/proc/self/environ``
keeps what it was started with), the launcher starts itself again without them, handing
them over on a pipe, so no process of the kernel's shows them (``%env``,
``/proc/…/environ``). Requests on the control port are HMAC-signed with the same key
(jupyter_client's Session), so only the server holding the key can restart or end it.

Without CurveZMQ every port listens on the pod's own loopback only, where kubelet's
port-forward connects: nothing else on the pod network reaches the kernel. With a Curve
key pair (the server connects to the pod IP) every port, the launcher's own included, is
Curve-encrypted and listens on the pod IP.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from typing import Any

KEY_VARIABLE = "JUPYTER_PAI_KERNEL_KEY"
#: CurveZMQ key pair (Z85) where the server connects to the pod IP, from the Secret too.
CURVE_VARIABLES = ("JUPYTER_PAI_CURVE_PUBLICKEY", "JUPYTER_PAI_CURVE_SECRETKEY")
#: How a job's secrets reach its pods (the kernel's key and key pair among them).
SECRET_PREFIX = "PAI_SECRET_"
#: The pod's own loopback, where kubelet's port-forward connects: 127.0.0.1, unless the
#: pod has no network of its own (the test cluster's runner gives each pod an address).
LOOPBACK_VARIABLE = "JUPYTER_PAI_POD_LOOPBACK"
#: The descriptor the launcher, started again without its secrets, reads them from.
SECRETS_FD_VARIABLE = "JUPYTER_PAI_LAUNCHER_SECRETS_FD"
PORT_LABEL = "kernel"
#: Order of the ports the job holds under :data:`PORT_LABEL`.
PORT_NAMES = ("shell_port", "iopub_port", "stdin_port", "control_port", "hb_port", "launcher")
STOP_GRACE_SECONDS = 3.0


def log(text: str) -> None:
    print(f"[jupyter-pai kernel launcher] {text}", file=sys.stderr, flush=True)


def job_ports() -> list[int]:
    """The ports of label ``kernel`` from OpenPAI's ``PAI_CONTAINER_HOST_PORT_LIST``."""
    text = os.environ.get("PAI_CONTAINER_HOST_PORT_LIST", "")
    for item in text.split(";"):
        label, _, numbers = item.partition(":")
        if label == PORT_LABEL:
            ports = [int(n) for n in numbers.split(",") if n.strip().isdigit()]
            if len(ports) == len(PORT_NAMES):
                return ports
    raise SystemExit(f"the job holds no {len(PORT_NAMES)} ports labelled {PORT_LABEL!r}")


def bind_address(curve: bool) -> str:
    """Where the kernel and the launcher listen: the pod IP where every channel is
    Curve-encrypted, else the pod's own loopback (kubelet's port-forward connects there)."""
    if curve:
        return os.environ.get("PAI_CURRENT_CONTAINER_IP") or "0.0.0.0"
    return os.environ.get(LOOPBACK_VARIABLE) or "127.0.0.1"


def is_secret(name: str) -> bool:
    return name in (KEY_VARIABLE, *CURVE_VARIABLES) or name.startswith(SECRET_PREFIX)


def without_secrets(env: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items() if not is_secret(k)}


def environ_block_holds_secrets() -> bool:
    """Whether this process was started with a secret in its environment: ``os.environ``
    can drop it, ``/proc/self/environ`` (what others in the pod may read) cannot."""
    try:
        with open("/proc/self/environ", "rb") as f:
            block = f.read()
    except OSError:
        return False  # no /proc: nothing but os.environ shows the environment
    names = (entry.partition(b"=")[0].decode(errors="replace") for entry in block.split(b"\0"))
    return any(is_secret(name) for name in names)


def restart_without_secrets(
    key: str, curve: tuple[str, str] | None, kernel: int, folder: str
) -> None:
    """Start this program again (same process, same arguments) with the secrets taken out
    of its environment, passing them, and the kernel already started (still this process's
    child), on a pipe. Returns only where that cannot be done."""
    try:
        with open("/proc/self/cmdline", "rb") as f:
            argv = [a.decode(errors="surrogateescape") for a in f.read().split(b"\0")[:-1]]
    except OSError:
        return
    if not argv or not sys.executable:
        return
    handed = {"key": key, "curve": curve, "kernel": kernel, "folder": folder}
    read, write = os.pipe()
    os.write(write, json.dumps(handed).encode())  # far below a pipe's buffer
    os.close(write)
    os.set_inheritable(read, True)
    env = without_secrets(dict(os.environ))
    env[SECRETS_FD_VARIABLE] = str(read)
    os.execve(sys.executable, argv, env)


class Handed:
    """What the program, started again, was handed by its first run."""

    def __init__(self, key: str, curve: tuple[str, str] | None, kernel: int, folder: str) -> None:
        self.key, self.curve, self.kernel, self.folder = key, curve, kernel, folder


def handed_over(fd: int) -> Handed:
    with os.fdopen(fd, "rb") as f:
        given = json.loads(f.read())
    curve = given.get("curve")
    return Handed(
        str(given["key"]),
        (str(curve[0]), str(curve[1])) if curve else None,
        int(given["kernel"]),
        str(given["folder"]),
    )


class AdoptedKernel:
    """The kernel the first run started: this process's child across ``exec``, but with
    no ``Popen`` of its own. The part of ``Popen`` the launcher uses."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:
                self.returncode = -1
            else:
                if pid:
                    self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while (code := self.poll()) is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(str(self.pid), timeout or 0)
            time.sleep(0.02)
        return code

    def send_signal(self, signum: int) -> None:
        if self.poll() is None:
            os.kill(self.pid, signum)


class Launcher:
    def __init__(
        self,
        key: str,
        ip: str,
        ports: list[int],
        idle_seconds: float,
        curve: tuple[str, str] | None = None,
        adopted: Handed | None = None,
    ) -> None:
        self.key = key
        self.curve = curve
        self.ip = ip
        self.ports = dict(zip(PORT_NAMES, ports, strict=True))
        self.idle_seconds = idle_seconds
        self.kernel: subprocess.Popen[bytes] | AdoptedKernel | None = None
        self.stopping = False
        if adopted is not None:  # the first run wrote the file and started the kernel
            self.folder = adopted.folder
            self.connection_file = os.path.join(self.folder, "kernel.json")
            self.kernel = AdoptedKernel(adopted.kernel)
            return
        self.folder = tempfile.mkdtemp(prefix="pai-kernel-")  # 0700
        self.connection_file = os.path.join(self.folder, "kernel.json")
        self._write_connection_file()

    def _write_connection_file(self) -> None:
        info: dict[str, Any] = {
            name: port for name, port in self.ports.items() if name != "launcher"
        }
        info.update(ip=self.ip, key=self.key, transport="tcp", signature_scheme="hmac-sha256")
        if self.curve is not None:  # ipykernel encrypts its channels with this pair
            info.update(curve_publickey=self.curve[0], curve_secretkey=self.curve[1])
        fd = os.open(self.connection_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump(info, f)

    def start_kernel(self) -> None:
        env = without_secrets(dict(os.environ))
        # ipykernel ends itself when this process is gone, even if it was SIGKILLed.
        env["JPY_PARENT_PID"] = str(os.getpid())
        cmd = [sys.executable, "-m", "ipykernel_launcher", "-f", self.connection_file]
        # Its own process group, so a signal reaches what the kernel started too.
        self.kernel = subprocess.Popen(
            cmd, env=env, stdin=subprocess.DEVNULL, start_new_session=True
        )
        log(f"ipykernel started (pid {self.kernel.pid}) on {self.ip}")

    def signal_kernel(self, signum: int) -> None:
        if self.kernel is not None and self.kernel.poll() is None:
            try:
                os.killpg(self.kernel.pid, signum)
            except OSError:
                self.kernel.send_signal(signum)

    def stop_kernel(self) -> None:
        if self.kernel is None or self.kernel.poll() is not None:
            return
        self.signal_kernel(signal.SIGTERM)
        try:
            self.kernel.wait(STOP_GRACE_SECONDS)
        except subprocess.TimeoutExpired:
            self.signal_kernel(signal.SIGKILL)
            self.kernel.wait()

    def exit_code(self) -> int | None:
        return None if self.kernel is None else self.kernel.poll()

    def handle(self, msg_type: str, content: dict[str, Any]) -> dict[str, Any]:
        if msg_type == "signal":
            self.signal_kernel(int(content["signum"]))
        elif msg_type == "start" and self.exit_code() is not None:
            self.start_kernel()
        elif msg_type == "end":
            self.stopping = True
        return {"exit_code": self.exit_code(), "pid": self.kernel.pid if self.kernel else None}

    def serve(self) -> int:
        import zmq
        from jupyter_client.session import Session

        session = Session(key=self.key.encode(), signature_scheme="hmac-sha256")
        context = zmq.Context()
        sock = context.socket(zmq.ROUTER)
        sock.linger = 0
        if self.curve is not None:  # as encrypted as the kernel's own channels
            sock.curve_publickey = self.curve[0].encode()
            sock.curve_secretkey = self.curve[1].encode()
            sock.curve_server = True
        sock.bind(f"tcp://{self.ip}:{self.ports['launcher']}")
        last_contact = time.monotonic()
        try:
            while not self.stopping:
                if sock.poll(200):
                    try:
                        idents, msg = session.feed_identities(sock.recv_multipart(), copy=True)
                        request = session.deserialize(msg, content=True, copy=True)
                    except Exception as error:  # bad signature, replay, garbage: ignore it
                        log(f"refused a control message: {type(error).__name__}")
                        continue
                    last_contact = time.monotonic()
                    reply = self.handle(request["header"]["msg_type"], request["content"])
                    session.send(sock, "reply", reply, parent=request, ident=idents)
                elif time.monotonic() - last_contact > self.idle_seconds:
                    log(
                        f"no Jupyter server has contacted this kernel for {self.idle_seconds:g} s: "
                        "ending it, which frees its GPUs"
                    )
                    break
        finally:
            self.stop_kernel()
            sock.close()
            context.term()
        return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="jupyter_pai.kernels.launcher")
    parser.add_argument("--idle-seconds", type=float, default=600.0)
    args = parser.parse_args(argv)
    ports = job_ports()
    handed = os.environ.pop(SECRETS_FD_VARIABLE, None)
    if handed is not None:
        given = handed_over(int(handed))
        ip = bind_address(given.curve is not None)
        launcher = Launcher(given.key, ip, ports, args.idle_seconds, given.curve, given)
    else:
        key = os.environ.get(KEY_VARIABLE, "")
        public, secret = (os.environ.get(name, "") for name in CURVE_VARIABLES)
        if not key:
            raise SystemExit(f"{KEY_VARIABLE} is not set (the kernel job's Secret)")
        curve = (public, secret) if public and secret else None
        launcher = Launcher(key, bind_address(curve is not None), ports, args.idle_seconds, curve)
        # The kernel starts first: it need not wait while this program starts again.
        launcher.start_kernel()
        if environ_block_holds_secrets() and launcher.kernel is not None:
            restart_without_secrets(key, curve, launcher.kernel.pid, launcher.folder)

    def on_term(signum: int, frame: object) -> None:
        launcher.stopping = True

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # an interrupt is for the kernel only
    return launcher.serve()


@functools.cache
def inline_command(python: str = "python3") -> str:
    """A shell command that runs this file's source with ``python`` where jupyter-pai is
    not installed (any image with Python and ipykernel)."""
    import base64
    from pathlib import Path

    source = base64.b64encode(Path(__file__).read_bytes()).decode()
    boot = f"import base64;exec(compile(base64.b64decode('{source}'),'pai-kernel-launcher','exec'))"
    return f'{python} -c "{boot}"'


if __name__ == "__main__":
    sys.exit(main())
