"""``jupyter_pai.widgets.launcher()``: the panel's launch form inside a notebook — a
virtual cluster with its free GPUs (read again every few seconds), a GPU count bounded by
what the VC can hold, an image from the catalogue or a registry's tags, instances and a command → a job."""

from __future__ import annotations

import html
import threading
from typing import TYPE_CHECKING, Any

import ipywidgets as w

from ..backends.models import VirtualCluster
from ..errors import FieldError, PAIError, SpecError
from .imagepicker import ImagePicker
from .live import DEFAULT_INTERVAL, LiveBox, Ticker

if TYPE_CHECKING:
    from ..notebook.client import Client
    from ..notebook.job import Job

VC_REFRESH_SECONDS = 5 * DEFAULT_INTERVAL


def vc_label(vc: VirtualCluster) -> str:
    queued = f", {vc.queued_jobs} queued" if vc.queued_jobs else ""
    return f"{vc.name} — {vc.free.gpu} of {vc.capacity.gpu} GPUs free{queued}"


class Launcher(LiveBox):
    """The form; :meth:`submit` (the button) submits and keeps the job in :attr:`job`."""

    def __init__(
        self, client: Client, *, interval: float = VC_REFRESH_SECONDS, live: bool = True
    ) -> None:
        self.client = client
        self.vcs: dict[str, VirtualCluster] = {}
        self.job: Job | None = None
        self._lock = threading.RLock()  # the ticker's thread and the form both read VCs
        style = {"description_width": "90px"}
        self.vc = w.Dropdown(description="VC", style=style, layout=w.Layout(width="420px"))
        self.gpus = w.BoundedIntText(value=0, min=0, max=0, description="GPUs", style=style)
        # The VC's GPU types with their free GPUs; hidden where GPUs have no types.
        self.gpu_type = w.Dropdown(
            options=[("any type", "")],
            description="GPU type",
            style=style,
            layout=w.Layout(width="420px", display="none"),
        )
        self.instances = w.BoundedIntText(
            value=1, min=1, max=64, description="instances", style=style
        )
        self.image = ImagePicker(client.image_choices(), style)
        self.name = w.Text(description="name", placeholder="optional", style=style)
        self.command = w.Textarea(
            description="command",
            placeholder="python train.py",
            style=style,
            layout=w.Layout(width="420px", height="80px"),
        )
        self.button = w.Button(description="Submit", button_style="primary", icon="play")
        self.total = w.HTML()
        self.status = w.HTML()
        super().__init__(
            [
                self.vc,
                w.HBox([self.gpus, self.total]),
                self.gpu_type,
                self.instances,
                self.image,
                self.name,
                self.command,
                self.button,
                self.status,
            ]
        )
        self.add_class("jp-pai-launcher")
        parts = ("vc", "gpus", "gpu_type", "instances", "image", "name", "command", "button")
        for part in (*parts, "status"):
            getattr(self, part).add_class(f"jp-pai-launcher-{part}")
        self.vc.observe(lambda _: self._bound_gpus(), names="value")
        self.gpus.observe(lambda _: self._show_total(), names="value")
        self.instances.observe(lambda _: self._show_total(), names="value")
        self.button.on_click(lambda _: self.submit())
        self.refresh_vcs()
        if live:
            self.ticker = Ticker(self.refresh_vcs, interval, on_error=self._show_error).start()

    # -- reading ---------------------------------------------------------------------------

    def refresh_vcs(self) -> None:
        """Read the VCs again: labels show free GPUs now; the chosen VC stays chosen."""
        vcs = {vc.name: vc for vc in self.client.vcs()}
        options = [(vc_label(vc), name) for name, vc in vcs.items()]
        with self._lock:
            chosen = self.vc.value
            self.vcs = vcs
            if list(self.vc.options) != options:
                self.vc.options = options
                self.vc.value = chosen if chosen in vcs else next(iter(vcs), None)
            self._bound_gpus()

    def _bound_gpus(self) -> None:
        """GPUs per instance: at most what the VC's jobs may hold at once."""
        vc = self.vcs.get(str(self.vc.value))
        self.gpus.max = vc.capacity.gpu if vc else 0
        types = vc.gpu_types if vc else []
        options = [("any type", "")] + [
            (f"{t.name} — {t.free} of {t.capacity} free", t.name) for t in types
        ]
        if list(self.gpu_type.options) != options:
            chosen = self.gpu_type.value
            self.gpu_type.options = options
            self.gpu_type.value = chosen if chosen in {v for _, v in options} else ""
        self.gpu_type.layout.display = None if types else "none"
        self._show_total()

    def _show_total(self) -> None:
        vc = self.vcs.get(str(self.vc.value))
        need = self.gpus.value * self.instances.value
        if vc is None:
            self.total.value = ""
            self.button.disabled = True
            return
        over = need > vc.capacity.gpu
        self.button.disabled = over
        colour = "#c62828" if over else "inherit"
        note = f" — VC {vc.name} can hold at most {vc.capacity.gpu}" if over else ""
        waits = " (waits for GPUs to free up)" if not over and need > vc.free.gpu else ""
        self.total.value = (
            f'<span class="jp-pai-total" style="color:{colour}">{need} GPU(s) in all'
            f"{note}{waits}</span>"
        )

    # -- submitting ------------------------------------------------------------------------

    def spec(self) -> dict[str, Any]:
        """The form as a short-form job."""
        command = [line for line in self.command.value.splitlines() if line.strip()]
        spec: dict[str, Any] = {
            "vc": self.vc.value,
            "gpus": self.gpus.value,
            "instances": self.instances.value,
            "image": self.image.value,
            **({"gpuType": self.gpu_type.value} if self.gpu_type.value else {}),
            "command": command,
        }
        if self.name.value.strip():
            spec["name"] = self.name.value.strip()
        return spec

    def submit(self) -> Job | None:
        """Submit the form; the status line says the job's id, or what was wrong."""
        if not self.command.value.strip():
            self._show_error(
                SpecError([FieldError("command", "enter the command every instance runs")])
            )
            return None
        self.button.disabled = True
        try:
            self.job = self.client.submit(self.spec())
        except PAIError as exc:
            self._show_error(exc)
            return None
        finally:
            self._show_total()
        self.status.value = (
            f'<span class="jp-pai-submitted">submitted <b>{html.escape(self.job.id)}</b> '
            f"({self.job.detail.state.value})</span>"
        )
        self.refresh_vcs()
        return self.job

    def _show_error(self, exc: Exception) -> None:
        text = str(exc)
        if isinstance(exc, SpecError) and exc.errors:
            text = "; ".join(f"{e.path}: {e.message}" for e in exc.errors)
        self.status.value = (
            f'<span class="jp-pai-error" style="color:#c62828">{html.escape(text)}</span>'
        )
