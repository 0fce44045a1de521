"""The in-task (in-pod) kernel launcher: ``python -m jupyter_pai.kernels.launcher``.

It runs as the kernel job's only task and owns the job's life: ipykernel runs on the
ports the job holds (label ``kernel``: shell, iopub, stdin, control, hb, then the
launcher's own control port); the launcher restarts it when the Jupyter server asks (the
job and its GPUs stay), and ends — freeing the GPUs — when told to, when stopped, or when
no Jupyter server has contacted it for ``--idle-seconds`` (a server that died strands no
GPU).

The task's shell starts the first ipykernel itself (:func:`start_commands`), as a plain
pod would, and only then this program: a kernel in a pod answers as soon as one started
directly, without waiting for a second Python to start first.

Self-contained on purpose: it imports only the standard library and pyzmq (which comes
with ipykernel), so on Kubernetes any image with Python and ipykernel runs it, shipped as
source in the command (:func:`inline_command`). It signs its messages itself
(:class:`SignedWire`) rather than through jupyter_client, whose import would take the CPU
ipykernel needs while both start.

The connection key comes from the job's Secret into a shell variable and reaches ipykernel
and the launcher in a connection file in a 0700 folder: never in an argument list, never in
an environment. The shell takes the secrets out of its environment before it starts
either, so no process of the kernel's shows them (``%env``, ``/proc/…/environ``). Requests
on the control port are HMAC-signed with the same key (Jupyter's wire protocol), so only
the server holding the key can restart or end it.

Without CurveZMQ every port listens on the pod's own loopback only, where kubelet's
port-forward connects: nothing else on the pod network reaches the kernel. With a Curve
key pair (the server connects to the pod IP) every port, the launcher's own included, is
Curve-encrypted and listens on the pod IP.
"""

from __future__ import annotations

# It starts beside ipykernel, taking CPU the kernel starts with: no argparse, subprocess,
# tempfile or typing, and the rest imported where it is used.
import functools
import json
import os
import signal
import sys
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    import collections
    from typing import Any

KEY_VARIABLE = "JUPYTER_PAI_KERNEL_KEY"
#: CurveZMQ key pair (Z85) where the server connects to the pod IP, from the Secret too.
CURVE_VARIABLES = ("JUPYTER_PAI_CURVE_PUBLICKEY", "JUPYTER_PAI_CURVE_SECRETKEY")
#: How a job's secrets reach its pods (the kernel's key and key pair among them).
SECRET_PREFIX = "PAI_SECRET_"
#: The pod's own loopback, where kubelet's port-forward connects: 127.0.0.1, unless the
#: pod has no network of its own (the test cluster's runner gives each pod an address).
LOOPBACK_VARIABLE = "JUPYTER_PAI_POD_LOOPBACK"
PORT_LABEL = "kernel"
#: Order of the ports the job holds under :data:`PORT_LABEL`.
PORT_NAMES = ("shell_port", "iopub_port", "stdin_port", "control_port", "hb_port", "launcher")
STOP_GRACE_SECONDS = 3.0
#: A "ready" request is answered once the kernel listens, or after this (then asked again).
READY_WAIT_SECONDS = 1.0
#: How often, while a "ready" request waits, the kernel's ports are tried.
READY_CHECK_MS = 10


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


def control_listener(ip: str, port: int) -> int:
    """The launcher's own port, bound and listening from the first moment (ZeroMQ adopts
    the descriptor later): a server that connects while this program is still starting
    is taken, not refused, so its port-forward opens one stream rather than one per try.
    A raw descriptor, owned by no Python object (ZeroMQ closes it)."""
    import socket

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((ip, port))
    sock.listen(64)
    return sock.detach()


class SignedWire:
    """Jupyter's wire protocol for the control port, HMAC-SHA256 signed with the kernel's
    key: what jupyter_client's ``Session`` (the server's side) sends and checks. A message
    whose signature is wrong, or that was seen before (a replay), is refused."""

    DELIMITER = b"<IDS|MSG>"
    HISTORY = 1 << 16

    def __init__(self, key: bytes) -> None:
        import collections
        import uuid

        self.key = key
        self.session = uuid.uuid4().hex
        self._seen: set[bytes] = set()
        self._order: collections.deque[bytes] = collections.deque()

    def _sign(self, parts: list[bytes]) -> bytes:
        import hashlib
        import hmac

        mac = hmac.new(self.key, digestmod=hashlib.sha256)
        for part in parts:
            mac.update(part)
        return mac.hexdigest().encode()

    def receive(self, frames: list[bytes]) -> tuple[list[bytes], dict[str, Any], dict[str, Any]]:
        """The sender's identities, the header and the content; ValueError if refused."""
        try:
            at = frames.index(self.DELIMITER)
        except ValueError:
            raise ValueError("no message delimiter") from None
        idents, rest = frames[:at], frames[at + 1 :]
        if len(rest) < 5:
            raise ValueError("too few message parts")
        signature, parts = rest[0], rest[1:5]
        import hmac

        if not hmac.compare_digest(signature, self._sign(parts)):
            raise ValueError("bad signature")
        if signature in self._seen:
            raise ValueError("a replayed message")
        self._seen.add(signature)
        self._order.append(signature)
        if len(self._order) > self.HISTORY:
            self._seen.discard(self._order.popleft())
        header, content = json.loads(parts[0]), json.loads(parts[3])
        if not isinstance(header, dict) or not isinstance(content, dict):
            raise ValueError("header and content must be objects")
        return idents, header, content

    def reply(
        self, idents: list[bytes], parent: dict[str, Any], content: dict[str, Any]
    ) -> list[bytes]:
        import datetime
        import uuid

        header = {
            "msg_id": uuid.uuid4().hex,
            "msg_type": "reply",
            "username": "pai-kernel-launcher",
            "session": self.session,
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(),
            "version": "5.3",
        }
        parts = [json.dumps(p).encode() for p in (header, parent, {}, content)]
        return [*idents, self.DELIMITER, self._sign(parts), *parts]


class KernelStillRunning(Exception):
    """The kernel did not end within the time given."""


class KernelProcess:
    """The kernel, this process's child (the shell that started the first one became this
    program), by its pid: the part of ``Popen`` the launcher uses."""

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
                raise KernelStillRunning(f"kernel {self.pid} still runs after {timeout} s")
            time.sleep(0.02)
        return code

    def send_signal(self, signum: int) -> None:
        if self.poll() is None:
            os.kill(self.pid, signum)


class Launcher:
    def __init__(
        self, connection_file: str, launcher_port: int, idle_seconds: float, kernel: int
    ) -> None:
        """``connection_file``: ipykernel's (the key, the ports, the address, the Curve
        pair), written by the task's shell; ``kernel``: the pid of the ipykernel it
        started, this process's child."""
        with open(connection_file) as f:
            info = json.load(f)
        self.connection_file = connection_file
        self.key = str(info["key"])
        self.ip = str(info["ip"])
        public, secret = info.get("curve_publickey"), info.get("curve_secretkey")
        self.curve = (str(public), str(secret)) if public and secret else None
        ports = [int(info[name]) for name in PORT_NAMES[:-1]] + [launcher_port]
        self.ports = dict(zip(PORT_NAMES, ports, strict=True))
        self.idle_seconds = idle_seconds
        self.kernel: KernelProcess | None = KernelProcess(kernel)
        self._listening = False
        self.stopping = False
        # Bound at once, before ZeroMQ's import: a server connecting meanwhile waits in it.
        self.control_fd = control_listener(self.ip, launcher_port)

    def start_kernel(self) -> None:
        """Start ipykernel again (a restart): the first was started by the task's shell."""
        env = dict(os.environ)  # the shell took the secrets out
        # ipykernel ends itself when this process is gone, even if it was SIGKILLed.
        env["JPY_PARENT_PID"] = str(os.getpid())
        cmd = [sys.executable, "-m", "ipykernel_launcher", "-f", self.connection_file]
        # Its own session (so a signal reaches what the kernel started too), stdin empty.
        pid = os.posix_spawn(
            sys.executable,
            cmd,
            env,
            file_actions=[(os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0)],
            setsid=True,
        )
        self.kernel = KernelProcess(pid)
        self._listening = False
        log(f"ipykernel started (pid {pid}) on {self.ip}")

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
        except KernelStillRunning:
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
        return {
            "exit_code": self.exit_code(),
            "pid": self.kernel.pid if self.kernel else None,
            "listening": self.kernel_listening(),
        }

    def starting(self) -> bool:
        """The kernel runs but does not listen yet."""
        return self.exit_code() is None and not self.kernel_listening()

    def kernel_listening(self) -> bool:
        """Whether ipykernel takes connections on all its ports yet. The server connects
        its channels only then: each connection through a port-forward made earlier is
        refused and opened again, which costs the CPU the kernel is starting with."""
        if self._listening or self.kernel is None or self.kernel.poll() is not None:
            return self._listening
        import socket

        for name, port in self.ports.items():
            if name == "launcher":
                continue
            try:
                socket.create_connection((self.ip, port), timeout=0.2).close()
            except OSError:
                return False
        self._listening = True
        return True

    def serve(self) -> int:
        import zmq

        wire = SignedWire(self.key.encode())
        context = zmq.Context()
        sock = context.socket(zmq.ROUTER)
        sock.linger = 0
        sock.maxmsgsize = 1 << 20  # a control message is a few hundred bytes
        if self.curve is not None:  # as encrypted as the kernel's own channels
            sock.curve_publickey = self.curve[0].encode()
            sock.curve_secretkey = self.curve[1].encode()
            sock.curve_server = True
        sock.use_fd = self.control_fd  # bound at the start: connections wait in it
        sock.bind(f"tcp://{self.ip}:{self.ports['launcher']}")
        last_contact = time.monotonic()
        # "ready" requests answered once the kernel listens: (by when, idents, header).
        waiting: list[tuple[float, list[bytes], dict[str, Any]]] = []
        try:
            while not self.stopping:
                if sock.poll(READY_CHECK_MS if waiting else 200):
                    try:
                        idents, header, content = wire.receive(sock.recv_multipart())
                    except ValueError as error:  # bad signature, replay, garbage: ignore it
                        log(f"refused a control message: {error}")
                        continue
                    last_contact = time.monotonic()
                    msg_type = str(header.get("msg_type"))
                    if msg_type == "ready" and self.starting():
                        waiting.append((time.monotonic() + READY_WAIT_SECONDS, idents, header))
                        continue
                    reply = self.handle(msg_type, content)
                    sock.send_multipart(wire.reply(idents, header, reply))
                if waiting:
                    now, starting = time.monotonic(), self.starting()
                    for entry in [w for w in waiting if not starting or w[0] <= now]:
                        waiting.remove(entry)
                        sock.send_multipart(
                            wire.reply(entry[1], entry[2], self.handle("ready", {}))
                        )
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
            try:  # the key's file and its folder go with the kernel
                os.remove(self.connection_file)
                os.rmdir(os.path.dirname(self.connection_file))
            except OSError:
                pass
        return 0


def arguments(argv: list[str]) -> dict[str, str]:
    """``--name value`` pairs (``--name=value`` too): a few, so no argparse to import."""
    found: dict[str, str] = {}
    items = iter(argv)
    for arg in items:
        if not arg.startswith("--"):
            raise SystemExit(f"unexpected argument {arg!r}")
        name, has_value, value = arg[2:].partition("=")
        found[name] = value if has_value else next(items, "")
    return found


def main(argv: list[str] | None = None) -> int:
    given = arguments(sys.argv[1:] if argv is None else argv)
    for needed in ("kernel", "connection-file"):
        if not given.get(needed):
            raise SystemExit(f"--{needed} is needed (the task's shell gives it)")
    try:
        idle_seconds = float(given.get("idle-seconds", "600"))
        kernel = int(given["kernel"])
    except ValueError as error:
        raise SystemExit(f"bad --idle-seconds or --kernel: {error}") from None
    launcher = Launcher(given["connection-file"], job_ports()[-1], idle_seconds, kernel)
    log(f"ipykernel started (pid {kernel}) on {launcher.ip}")

    def on_term(signum: int, frame: object) -> None:
        launcher.stopping = True

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # an interrupt is for the kernel only
    return launcher.serve()


def start_commands(launcher: str, python: str, idle_seconds: float, curve: bool) -> list[str]:
    """The task's shell lines, after the key's (and Curve pair's) assignment to shell
    variables, that start the kernel: the connection file in a new 0700 folder, ipykernel
    in its own session with no secret in its environment, then ``launcher`` (this
    program) as the task itself, the kernel's parent, with none either. ``python`` runs
    ipykernel; every job field reaches the shell as data (none is in these lines)."""
    import shlex

    python = shlex.quote(python)
    ip = "${PAI_CURRENT_CONTAINER_IP:-0.0.0.0}" if curve else f"${{{LOOPBACK_VARIABLE}:-127.0.0.1}}"
    fields = ",".join(f'"{name}":%s' for name in PORT_NAMES[:-1])
    doc = "{" + fields + ',"ip":"%s","key":"%s","transport":"tcp","signature_scheme":"hmac-sha256"'
    values = f'"${{pai_ports[@]:0:5}}" "{ip}" "${KEY_VARIABLE}"'
    if curve:  # ipykernel encrypts its channels with this pair
        doc += ',"curve_publickey":"%s","curve_secretkey":"%s"'
        values += "".join(f' "${name}"' for name in CURVE_VARIABLES)
    doc += "}"
    unset = f"unset ${{!{SECRET_PREFIX}@}} {KEY_VARIABLE} {' '.join(CURVE_VARIABLES)}"
    count = len(PORT_NAMES)
    return [
        f"pai_ports=(${{PAI_CONTAINER_HOST_{PORT_LABEL}_PORT_LIST//,/ }})",
        f'[ "${{#pai_ports[@]}}" -eq {count} ] || {{ echo "[jupyter-pai kernel launcher] the job'
        f' holds no {count} ports labelled {PORT_LABEL}" >&2; exit 1; }}',
        'pai_folder="${TMPDIR:-/tmp}/pai-kernel-$BASHPID-$RANDOM$RANDOM"',
        'mkdir -m 700 "$pai_folder"',
        f"printf '{doc}' {values} > \"$pai_folder/kernel.json\"",
        "pai_launcher=$BASHPID",
        "pai_setsid=; if command -v setsid >/dev/null 2>&1; then pai_setsid=setsid; fi",
        # The kernel ends itself once its parent (the launcher) is gone: JPY_PARENT_PID.
        f"({unset}; JPY_PARENT_PID=$pai_launcher exec $pai_setsid {python} -m ipykernel_launcher"
        ' -f "$pai_folder/kernel.json") </dev/null &',
        "pai_kernel=$!",
        unset,
        f"exec {launcher} --idle-seconds {idle_seconds:g} --kernel $pai_kernel"
        ' --connection-file "$pai_folder/kernel.json"',
    ]


@functools.cache
def inline_command(python: str = "python3") -> str:
    """A shell command that runs this file's source with ``python`` where jupyter-pai is
    not installed (any image with Python and ipykernel)."""
    import base64
    import zlib
    from pathlib import Path

    # Compressed: the command is copied into every object the job's pod is made from (a
    # JobSet, Kueue's Workload, a Job, the pod), each hop slower with a larger object.
    # binascii and zlib, built in, unpack it: the base64 module's import costs milliseconds.
    packed = base64.b64encode(zlib.compress(Path(__file__).read_bytes(), 9)).decode()
    boot = (
        f"import binascii,zlib;exec(compile(zlib.decompress(binascii.a2b_base64('{packed}')),"
        "'pai-kernel-launcher','exec'))"
    )
    return f'{python} -c "{boot}"'


if __name__ == "__main__":
    sys.exit(main())
