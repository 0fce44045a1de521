"""``tensorboard``: TensorBoard in the background on instance 0 of the first task role, on a
declared port (label ``tensorboard``, so it is allocated like any port and listed in the
task's ports and ``PAI_CONTAINER_HOST_tensorboard_PORT_LIST``).

OpenPAI starts it on the ``port`` parameter outside its port scheduling; here the port is
declared: on Kubernetes the given ``port`` is that label's number, on the local backend a
free port replaces it (a warning says so)."""

from __future__ import annotations

from ...errors import FieldError
from ...spec.pluginparams.tensorboard import logdirs, port_number
from ...spec.pluginparams.uses import PluginUse
from ...spec.protocol import JobProtocol
from ..shell import shell_word
from .base import LOCAL, Plugin, Sections

LABEL = "tensorboard"
PORT = f"${{PAI_CONTAINER_HOST_{LABEL}_PORT_LIST%%,*}}"


class Tensorboard(Plugin):
    name = "tensorboard"

    def warnings(self, use: PluginUse, job: JobProtocol, backend: str) -> list[FieldError]:
        if not use.parameters:
            return [
                FieldError(
                    use.path,
                    "runtime plugin tensorboard: no parameters, so TensorBoard does not start "
                    "(OpenPAI skips such an entry too); give logdir",
                )
            ]
        first = job.role_names[0]
        if first not in use.roles:
            return [
                FieldError(
                    use.path,
                    f"runtime plugin tensorboard: runs only on instance 0 of the first task "
                    f"role ({first}), which this entry leaves out, so TensorBoard never starts",
                )
            ]
        port = port_number(use.parameters.get("port"))
        if backend == LOCAL and port is not None:
            return [
                FieldError(
                    use.field_path("port"),
                    f"runtime plugin tensorboard: the local backend gives TensorBoard a free "
                    f"port instead of {port}; the task's ports list it as {LABEL!r}",
                )
            ]
        return []

    def ports(self, use: PluginUse, job: JobProtocol) -> dict[str, int | None]:
        if use.role != job.role_names[0] or not use.parameters:
            return {}
        return {LABEL: port_number(use.parameters.get("port"))}

    def sections(self, use: PluginUse, job: JobProtocol, backend: str) -> Sections:
        if use.role != job.role_names[0] or not use.parameters:
            return Sections()
        dirs = logdirs(use.parameters.get("logdir")) or {}
        if len(dirs) == 1:
            logdir = "--logdir=" + shell_word(next(iter(dirs.values())), use.kept_secrets)
        else:
            spec = ",".join(f"{k}:{v}" for k, v in dirs.items())
            logdir = "--logdir_spec=" + shell_word(spec, use.kept_secrets)
        # Locally the port is on this machine: serve this machine only. In a pod, every
        # address (OpenPAI's --bind_all), so port-forward reaches it too.
        bind = '--host "$PAI_CONTAINER_HOST_IP"' if backend == LOCAL else "--bind_all"
        return Sections(
            pre=[
                'if [ "$PAI_CURRENT_TASK_ROLE_CURRENT_TASK_INDEX" = 0 ]; then',
                "  command -v tensorboard >/dev/null 2>&1 || pip install tensorboard",
                f'  tensorboard {logdir} --port="{PORT}" {bind} &',
                "fi",
            ]
        )
