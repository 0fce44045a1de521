"""The backend a provisioner submits through (one per event loop, shared by its kernels)
and where a running kernel job's ports are reached from this process."""

from __future__ import annotations

import asyncio
import os
import weakref
from dataclasses import dataclass, field
from typing import Any

from traitlets.config import Config

from ..backends.base import Backend
from ..backends.models import JobDetail
from ..config import PAIConfig, load_config
from ..errors import Unavailable
from .launcher import PORT_LABEL

_BACKENDS: weakref.WeakKeyDictionary[
    asyncio.AbstractEventLoop, dict[str, tuple[Backend, PAIConfig, asyncio.Task[None]]]
]
_BACKENDS = weakref.WeakKeyDictionary()


async def backend_for(parent: Any) -> tuple[Backend, PAIConfig]:
    """The started backend for this loop and configuration, made by ``jupyter_pai_config``
    and, over it, the kernel manager's own configuration (the server's)."""
    loop = asyncio.get_running_loop()
    config = await asyncio.to_thread(load_config)  # reads files: not on the loop
    if parent is not None and getattr(parent, "config", None) is not None:
        config.merge(parent.config)
    # The settings read from the environment count too (tests change them per test).
    env = {k: v for k, v in os.environ.items() if k.startswith("JUPYTER_PAI_")}
    key = repr((sorted(env.items()), config))
    backends = _BACKENDS.setdefault(loop, {})
    if key not in backends:
        # The server's own backend runs the scheduling passes; this one only submits.
        config.merge(Config({"LocalBackend": {"housekeeping": 0.0}}))
        pai = PAIConfig(config=config)
        backend = pai.make_backend()
        # Every caller awaits the one start: two kernels started at once both get a
        # backend whose caches are synced.
        backends[key] = (backend, pai, asyncio.ensure_future(backend.start()))
    backend, pai, started = backends[key]
    try:
        await asyncio.shield(started)
    except Exception:
        if backends.get(key, (None, None, None))[2] is started:
            del backends[key]  # the next caller starts afresh
        raise
    return backend, pai


async def close_backends() -> None:
    """Close the backends this loop started (the end of a script or a test)."""
    for backend, _, started in _BACKENDS.pop(asyncio.get_running_loop(), {}).values():
        if not started.done():
            started.cancel()
        await backend.close()


@dataclass
class Endpoint:
    """Where the ports (shell, iopub, stdin, control, hb, launcher) are reached: ``tcp``
    at ``host``, or ``ipc``, Unix sockets named ``{host}-{port}`` (jupyter_client's way)."""

    host: str
    ports: list[int]
    transport: str = "tcp"
    closers: list[Any] = field(default_factory=list)
    resetters: list[Any] = field(default_factory=list)

    def address(self, port: int) -> str:
        """A ZeroMQ address of one of the ports."""
        if self.transport == "ipc":
            return f"ipc://{self.host}-{port}"
        return f"tcp://{self.host}:{port}"

    async def reset(self) -> None:
        """After a restart in the job: connections to the old kernel are dropped."""
        for reset in self.resetters:
            await reset()

    async def close(self) -> None:
        for close in self.closers:
            await close()


async def endpoint(backend: Backend, job: JobDetail, connect: str) -> Endpoint:
    task = job.tasks[0]
    ports = task.ports.get(PORT_LABEL) or []
    if not task.ip or not ports:
        raise Unavailable(f"job {job.id} runs but reports no address for its kernel ports")
    if backend.tasks_run_here or connect == "pod-ip":
        return Endpoint(task.ip, list(ports))
    if connect != "port-forward":
        raise Unavailable(f"PAIProvisioner.connect is {connect!r}; use port-forward or pod-ip")
    # Unix sockets in a folder only this user may enter: no other user of this machine
    # connects to the kernel through the user's port-forward.
    forward = await backend.forward_ports(job, list(ports))
    return Endpoint(
        forward.prefix,
        list(ports),
        transport="ipc",
        closers=[forward.close],
        resetters=[forward.reset],
    )
