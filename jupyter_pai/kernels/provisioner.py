"""``pai-provisioner``: a kernel that runs as a job of kind ``kernel`` on the configured
backend, chosen by a kernelspec's ``metadata.kernel_provisioner``.

Start submits the job and waits in the VC's queue for as long as it takes (no fixed
timeout: :attr:`PAIProvisioner.queue_limit_seconds` is the one limit, and it says so),
logging the reason whenever it changes; the job list shows it to JupyterLab, where the
user can stop (cancel) it. Once the job runs, its launcher (``launcher.py``) answers on
its control port; restart and interrupt go to it, so a restart keeps the job and its GPUs.
Shutdown stops the job. A heartbeat keeps the launcher from ending the kernel as idle.
Everything awaits the backend's async API: nothing blocks the server's event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any

import zmq
from jupyter_client.connect import KernelConnectionInfo
from jupyter_client.provisioning.provisioner_base import KernelProvisionerBase
from traitlets import Any as AnyTrait
from traitlets import Float, Integer, List, Unicode

from ..backends.base import Backend
from ..backends.models import JobDetail, JobState, TaskState
from ..errors import NotFound, PAIError
from ..submission.images import ImagePolicy
from .backends import Endpoint, backend_for, endpoint
from .control import Heartbeat, LauncherControl, LauncherUnreachable
from .jobspec import KernelRequest, kernel_job
from .launcher import PORT_NAMES
from .waiting import queue_status

STOP_WAIT_SECONDS = 15.0
#: How often a waiting kernel's status is worked out again (users see it within 2 s).
STATUS_SECONDS = 1.0
#: A kernel's job is looked at every QUICK_POLL s for its first QUICK_POLL_SECONDS (the
#: backend answers from its cache), then less often: it waits in a queue.
QUICK_POLL, QUICK_POLL_SECONDS = 0.05, 5.0


class KernelStartError(RuntimeError):
    """The kernel could not start; the message says why (shown by JupyterLab)."""


class PAIProvisioner(KernelProvisionerBase):
    virtual_cluster = Unicode("default", config=True, help="The VC the kernel queues in.")
    gpus = Integer(0, config=True, help="GPUs the kernel holds while it lives.")
    gpu_type = Unicode(
        "", config=True, help="The GPU type (``H100-80GB``, see ``jupyter pai vcs``); empty: any."
    )
    image = Unicode(
        "", config=True, help="A name or URI from PAIConfig.images (Kubernetes backends)."
    )
    cpu = AnyTrait(None, allow_none=True, config=True, help="CPUs (default: the job default).")
    memory_mb = AnyTrait(None, allow_none=True, config=True, help="Memory in MB.")
    storages = List(Unicode(), config=True, help="Storages (by name) mounted in the kernel.")
    queue_limit_seconds = Float(
        8 * 3600.0,
        config=True,
        help="""The longest a kernel waits in its VC's queue before the start gives up
        (and says so). Queueing never fails by any other timeout.""",
    )
    idle_seconds = Float(
        600.0,
        config=True,
        help="""A running kernel that no Jupyter server has contacted for this long ends
        itself and frees its GPUs (the server died, the laptop closed).""",
    )
    launcher_python = Unicode(
        "python3", config=True, help="The image's Python (with ipykernel), on Kubernetes."
    )
    connect = Unicode(
        "port-forward",
        config=True,
        help="""How the server reaches a pod's kernel: ``port-forward`` through the API
        server (the default; a server outside the cluster) or ``pod-ip`` (a server in it).""",
    )
    boot_timeout_seconds = Float(
        120.0,
        config=True,
        help="Once the job runs, how long its launcher may take to answer.",
    )

    job_id: str | None = None
    status: str | None = None
    _control: LauncherControl | None = None
    _endpoint: Endpoint | None = None
    _heartbeat: Heartbeat | None = None
    _exit_code: int | None = None
    _started_backend: Backend | None = None
    _curve: tuple[str, str] | None = None

    # -- start -------------------------------------------------------------------------

    @property
    def has_process(self) -> bool:
        return self.job_id is not None

    async def pre_launch(self, **kwargs: Any) -> dict[str, Any]:
        kwargs = await super().pre_launch(**kwargs)
        kwargs.setdefault("cmd", [])  # the job's command is built in launch_kernel
        return dict(kwargs)

    def request(self) -> KernelRequest:
        return KernelRequest(
            virtual_cluster=self.virtual_cluster,
            gpus=int(self.gpus),
            gpu_type=str(self.gpu_type),
            image=self.image,
            cpu=None if self.cpu is None else float(self.cpu),
            memory_mb=None if self.memory_mb is None else int(self.memory_mb),
            storages=tuple(self.storages),
            idle_seconds=self.idle_seconds,
        )

    async def _backend(self) -> Backend:
        if self._started_backend is None:
            self._started_backend, _ = await backend_for(self.parent)
        return self._started_backend

    def _key(self) -> bytes:
        assert self.parent is not None, "a provisioner belongs to a kernel manager"
        key: bytes = self.parent.session.key
        return key

    async def launch_kernel(self, cmd: list[str], **kwargs: Any) -> KernelConnectionInfo:
        if self.job_id is not None:
            return await self._restart_in_job()
        backend, pai_config = await backend_for(self.parent)
        self._started_backend = backend
        try:
            image_uri = ImagePolicy.from_config(pai_config).resolve(self.image)
            # The pod IP is reached across the cluster network: encrypt with CurveZMQ
            # (port-forward already runs inside the API server's TLS).
            if not backend.tasks_run_here and self.connect == "pod-ip":
                public, secret = zmq.curve_keypair()
                self._curve = (public.decode(), secret.decode())
            job = kernel_job(
                self.request(),
                name=f"kernel-{self.kernel_id[:8]}",
                key=self._key().decode(),
                image_uri=image_uri,
                in_process_launcher=backend.tasks_run_here,
                python=self.launcher_python,
                curve=self._curve,
            )
            detail = await backend.submit(job, working_dir=kwargs.get("cwd"))
        except PAIError as error:
            raise KernelStartError(_words(error)) from None
        self.job_id = detail.id
        self._exit_code = None
        self.log.info("jupyter-pai: kernel %s runs as job %s", self.kernel_id, detail.id)
        detail = await self._wait_until_running(detail)
        try:
            self._endpoint = await endpoint(backend, detail, self.connect)
            self._control = LauncherControl(
                self._key(), self._endpoint.address(self._endpoint.ports[-1]), self._server_key()
            )
            ready = await self._control.wait_ready(self.boot_timeout_seconds)
            if ready.get("exit_code") is not None:
                raise LauncherUnreachable(
                    f"ipykernel ended as it started (exit code {ready['exit_code']}); "
                    "the job's log says why"
                )
        except (LauncherUnreachable, PAIError) as error:
            await self._stop_job()
            raise KernelStartError(f"the kernel's job {detail.id} runs but: {error}") from None
        self._start_heartbeat()
        return self._connection_info()

    async def _wait_until_running(self, detail: JobDetail) -> JobDetail:
        backend = await self._backend()
        started = next_status = time.monotonic()
        pause = 0.02
        while True:
            if detail.state == JobState.RUNNING and detail.tasks[0].state == TaskState.RUNNING:
                self.status = None
                return detail
            if detail.state.terminal or detail.state == JobState.STOPPING:
                self.job_id = None
                why = detail.sub_state or detail.state.value.lower()
                raise KernelStartError(
                    f"the kernel's job {detail.id} ended before it started: {why}"
                )
            if detail.state == JobState.WAITING and time.monotonic() >= next_status:
                next_status = time.monotonic() + STATUS_SECONDS
                status = await queue_status(backend, detail)
                if status != self.status:
                    self.status = status
                    self.log.info("jupyter-pai: kernel %s %s", self.kernel_id, status)
                if time.monotonic() - started > self.queue_limit_seconds:
                    await self._stop_job()
                    raise KernelStartError(
                        f"gave up after waiting {self.queue_limit_seconds:g} s in the queue "
                        f"(PAIProvisioner.queue_limit_seconds): {status}"
                    )
            # Quick while a free GPU's pod starts (a second or two): woken by any change
            # the backend learns of (the pod running). Light once queued.
            queued = time.monotonic() - started > QUICK_POLL_SECONDS
            if queued:
                await asyncio.sleep(pause)
            else:
                await backend.job_may_change(detail.id, pause)
            pause = min(0.25 if queued else QUICK_POLL, pause * 1.5)
            try:
                detail = await backend.get_job(detail.id)
            except NotFound:
                self.job_id = None
                raise KernelStartError(f"the kernel's job {detail.id} is gone") from None

    def _server_key(self) -> bytes | None:
        """The launcher's Curve public key, where it is reached at the pod IP."""
        return None if self._curve is None else self._curve[0].encode()

    def _connection_info(self) -> KernelConnectionInfo:
        assert self._endpoint is not None
        ports = dict(zip(PORT_NAMES[:-1], self._endpoint.ports[:-1], strict=True))
        info: KernelConnectionInfo = {
            "ip": self._endpoint.host,
            "transport": self._endpoint.transport,
            "key": self._key(),
            "signature_scheme": "hmac-sha256",
            **ports,  # type: ignore[typeddict-item]
        }
        if self._curve is not None:
            info["curve_publickey"], info["curve_secretkey"] = self._curve
        self.connection_info = info
        return info

    async def _restart_in_job(self) -> KernelConnectionInfo:
        """A restart: the launcher starts a new ipykernel in the same job (same GPUs)."""
        try:
            await self._ask("start")
        except LauncherUnreachable:
            job_id, self.job_id = self.job_id, None
            raise KernelStartError(
                f"the kernel's job {job_id} has ended (stopped, or idle too long); "
                "start the kernel again to queue a new one"
            ) from None
        self._exit_code = None
        if self._endpoint is not None:
            await self._endpoint.reset()
        return self._connection_info()

    # -- talking to the launcher ---------------------------------------------------------

    async def _ask(self, msg_type: str, **content: Any) -> dict[str, Any]:
        if self._control is None:
            raise LauncherUnreachable("the kernel has no launcher yet")
        return await self._control.request(msg_type, content, timeout=5.0)

    def _start_heartbeat(self) -> None:
        if self._heartbeat is None and self._control is not None:
            every = max(0.5, min(10.0, self.idle_seconds / 4))
            self._heartbeat = Heartbeat(
                self._key(), self._control.address, every, self._server_key()
            )
            self._heartbeat.start()

    async def poll(self) -> int | None:
        if self.job_id is None:
            return 0 if self._exit_code is None else self._exit_code
        try:
            code = (await self._ask("poll"))["exit_code"]
        except LauncherUnreachable:
            code = await self._job_exit_code()
        return None if code is None else int(code)

    async def _job_exit_code(self) -> int | None:
        """The launcher does not answer: the kernel is dead if its job has ended."""
        backend = await self._backend()
        try:
            job = await backend.get_job(self.job_id or "")
        except NotFound:
            return 1
        if job.state.terminal:
            return job.exit_code if job.exit_code is not None else 1
        return None

    async def wait(self) -> int | None:
        while True:
            code = await self.poll()
            if code is not None:
                return code
            await asyncio.sleep(0.1)

    async def send_signal(self, signum: int) -> None:
        with contextlib.suppress(LauncherUnreachable):
            await self._ask("signal", signum=signum)

    async def kill(self, restart: bool = False) -> None:
        await self.send_signal(9)

    async def terminate(self, restart: bool = False) -> None:
        await self.send_signal(15)

    # -- end ---------------------------------------------------------------------------

    async def cleanup(self, restart: bool = False) -> None:
        if restart:
            return  # the job, its GPUs and the launcher stay for the new kernel
        if self._heartbeat is not None:
            self._heartbeat.stop()
            self._heartbeat = None
        with contextlib.suppress(LauncherUnreachable):
            await self._ask("end")
        await self._stop_job()
        if self._control is not None:
            self._control.close()
            self._control = None
        if self._endpoint is not None:
            await self._endpoint.close()
            self._endpoint = None

    async def _stop_job(self) -> None:
        """Stop the job, wait (briefly) until it has let its GPUs go, and delete it: a
        kernel's job, its key and its log are not kept once the kernel is gone."""
        job_id, self.job_id = self.job_id, None
        if job_id is None:
            return
        backend = await self._backend()
        deadline = time.monotonic() + STOP_WAIT_SECONDS
        try:
            job = await backend.stop_job(job_id)
            while not job.state.terminal and time.monotonic() < deadline:
                await asyncio.sleep(0.1)
                job = await backend.get_job(job_id)
            self._exit_code = job.exit_code if job.exit_code is not None else 0
            if job.state.terminal:
                await backend.delete_job(job_id)
            else:
                self.log.warning(
                    "jupyter-pai: kernel job %s is still %s; left for its stop to finish",
                    job_id,
                    job.state.value,
                )
        except NotFound:
            self._exit_code = 0
        except PAIError as error:
            self.log.warning("jupyter-pai: could not stop kernel job %s: %s", job_id, error)

    async def get_provisioner_info(self) -> dict[str, Any]:
        info: dict[str, Any] = await super().get_provisioner_info()
        info["job_id"] = self.job_id
        return info

    async def load_provisioner_info(self, provisioner_info: dict[str, Any]) -> None:
        await super().load_provisioner_info(provisioner_info)
        self.job_id = provisioner_info.get("job_id")

    def get_shutdown_wait_time(self, recommended: float = 5.0) -> float:
        return max(recommended, 5.0)


def _words(error: PAIError) -> str:
    details = "; ".join(str(e) for e in error.errors if str(e) not in error.message)
    return f"{error.message} ({details})" if details else error.message
