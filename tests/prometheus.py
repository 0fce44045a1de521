"""A real Prometheus (Debian's ``prometheus`` package) scraping a stand-in for NVIDIA's
DCGM exporter whose series each test sets: ``DCGM_FI_DEV_GPU_UTIL`` and
``DCGM_FI_DEV_FB_USED`` per (namespace, pod, gpu, Hostname), as dcgm-exporter labels them
on Kubernetes; and, for the hardware view, Debian's real node exporter
(``prometheus-node-exporter``) measuring this machine, labelled as a node of the test
cluster. Used by the utilisation tests and ``benchmarks/gpu_utilisation.py``."""

from __future__ import annotations

import shutil
import socket
import subprocess
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

PROMETHEUS = "/usr/bin/prometheus"
NODE_EXPORTER = "/usr/bin/prometheus-node-exporter"


@dataclass
class GpuSeries:
    """One GPU of a pod as the exporter reports it."""

    namespace: str
    pod: str
    gpu: int
    percent: float
    memory_mb: float
    #: The node the GPU is in (dcgm-exporter's ``Hostname`` label).
    hostname: str = ""


@dataclass
class DcgmExporter:
    """Serves ``/metrics`` in Prometheus's text format from :attr:`gpus` (edit freely)."""

    gpus: list[GpuSeries] = field(default_factory=list)
    port: int = 0
    scrapes: int = 0

    def text(self) -> str:
        lines = [
            "# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).",
            "# TYPE DCGM_FI_DEV_GPU_UTIL gauge",
        ]
        for g in self.gpus:
            lines.append(f"DCGM_FI_DEV_GPU_UTIL{{{_labels(g)}}} {g.percent}")
        lines += [
            "# HELP DCGM_FI_DEV_FB_USED Framebuffer memory used (in MiB).",
            "# TYPE DCGM_FI_DEV_FB_USED gauge",
        ]
        for g in self.gpus:
            lines.append(f"DCGM_FI_DEV_FB_USED{{{_labels(g)}}} {g.memory_mb}")
        return "\n".join(lines) + "\n"


def _labels(g: GpuSeries) -> str:
    return (
        f'gpu="{g.gpu}",UUID="GPU-{g.pod}-{g.gpu}",modelName="Test GPU",'
        f'namespace="{g.namespace}",pod="{g.pod}",container="main",Hostname="{g.hostname}"'
    )


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def dcgm_exporter() -> Iterator[DcgmExporter]:
    exporter = DcgmExporter()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = exporter.text().encode()
            exporter.scrapes += 1
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    exporter.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield exporter
    finally:
        server.shutdown()
        server.server_close()


@dataclass
class Prometheus:
    url: str
    process: subprocess.Popen[bytes]

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def _wait_ready(url: str, process: subprocess.Popen[bytes], log: Path, timeout: float) -> None:
    """Until ``url`` answers 200; a loud failure with the log's end if the process exits
    or ``timeout`` passes."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"{url} did not become ready: {log.read_text()[-2000:]}")
        time.sleep(0.2)


@contextmanager
def node_exporter(workdir: Path) -> Iterator[int]:
    """Debian's node exporter on a free port (its CPU and memory collectors only), or a
    loud failure when the package is missing (``scripts/test.sh`` installs it)."""
    binary = NODE_EXPORTER if Path(NODE_EXPORTER).exists() else shutil.which("node_exporter")
    if binary is None:
        raise RuntimeError(
            f"Debian's prometheus-node-exporter package is missing ({NODE_EXPORTER}): "
            "apt-get install prometheus-node-exporter, as scripts/test.sh does"
        )
    workdir.mkdir(parents=True, exist_ok=True)
    port = _free_port()
    log = (workdir / "node-exporter.log").open("wb")
    process = subprocess.Popen(
        [
            binary,
            f"--web.listen-address=127.0.0.1:{port}",
            "--collector.disable-defaults",
            "--collector.cpu",
            "--collector.meminfo",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        _wait_ready(f"http://127.0.0.1:{port}/metrics", process, workdir / "node-exporter.log", 30)
        yield port
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


@contextmanager
def prometheus(
    workdir: Path,
    exporter: DcgmExporter,
    interval: str = "1s",
    node_exporters: dict[str, int] | None = None,
) -> Iterator[Prometheus]:
    """Prometheus scraping ``exporter`` every ``interval``, and each node exporter of
    ``node_exporters`` (node name → port) with the label ``node`` set to that name, as
    a Kubernetes scrape configuration relabels it; fails loudly when the package is
    missing (``scripts/test.sh`` installs it)."""
    if not Path(PROMETHEUS).exists() and shutil.which("prometheus") is None:
        raise RuntimeError(
            "Debian's prometheus package is missing (/usr/bin/prometheus): "
            "apt-get install prometheus, as scripts/test.sh does"
        )
    workdir.mkdir(parents=True, exist_ok=True)
    config = workdir / "prometheus.yml"
    config.write_text(
        f"global: {{scrape_interval: {interval}, evaluation_interval: {interval}}}\n"
        "scrape_configs:\n"
        "  - job_name: dcgm\n"
        "    honor_labels: true\n"
        f"    static_configs: [{{targets: ['127.0.0.1:{exporter.port}']}}]\n"
        + "".join(
            f"  - job_name: node-{node}\n"
            f"    static_configs: [{{targets: ['127.0.0.1:{port}'], labels: {{node: {node}}}}}]\n"
            for node, port in (node_exporters or {}).items()
        )
    )
    port = _free_port()
    log = (workdir / "prometheus.log").open("wb")
    process = subprocess.Popen(
        [
            shutil.which("prometheus") or PROMETHEUS,
            f"--config.file={config}",
            f"--storage.tsdb.path={workdir / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    server = Prometheus(f"http://127.0.0.1:{port}", process)
    try:
        _wait_ready(f"{server.url}/-/ready", process, workdir / "prometheus.log", 60)
        yield server
    finally:
        server.stop()
        log.close()
