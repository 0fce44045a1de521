"""Live widgets without blocking the kernel: a daemon thread reads through the client and
sets the widgets' traits, so updates arrive while the kernel is idle or busy with another
cell (a cell waiting on ``job.wait()`` does not freeze a monitor). ipykernel sends comm
messages from any thread."""

from __future__ import annotations

import html
import threading
from collections.abc import Callable

import ipywidgets as w

#: Seconds between two reads of a live widget; short enough to watch a job start.
DEFAULT_INTERVAL = 1.0


class Ticker:
    """Calls ``tick`` every ``interval`` seconds on a daemon thread until :meth:`stop`, or
    until ``tick`` returns False (what it watches has ended). An exception from ``tick``
    goes to ``on_error`` and the ticker keeps going: a backend that was unreachable for a
    moment is read again next time."""

    def __init__(
        self,
        tick: Callable[[], bool | None],
        interval: float = DEFAULT_INTERVAL,
        on_error: Callable[[Exception], None] | None = None,
        name: str = "jupyter-pai-widget",
    ) -> None:
        self.tick = tick
        self.interval = interval
        self.on_error = on_error
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> Ticker:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopped.set()

    @property
    def running(self) -> bool:
        return self._thread.is_alive() and not self._stopped.is_set()

    def join(self, timeout: float | None = None) -> None:
        self._thread.join(timeout)

    def _run(self) -> None:
        while not self._stopped.is_set():
            try:
                if self.tick() is False:
                    return
            except Exception as exc:
                if self.on_error is not None:
                    self.on_error(exc)
            self._stopped.wait(self.interval)


class LiveBox(w.VBox):
    """A box a :class:`Ticker` keeps current; closing the box stops its ticker."""

    #: None until a subclass starts one (or if its ``__init__`` failed before).
    ticker: Ticker | None = None

    def close(self) -> None:
        if self.ticker is not None:
            self.ticker.stop()
        super().close()


def error_html(exc: Exception) -> str:
    return f'<span style="color:#c62828">{html.escape(str(exc))}</span>'
