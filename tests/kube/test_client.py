"""``jupyter_pai.Client`` on the Kubernetes backend of the test cluster, once per flavor:
submit, follow a rank's log as it is written, wait, read back, list, stop, typed errors.
Pods on the runner node really run their commands."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path

import nbformat
import pytest
from traitlets.config import Config

from jupyter_pai import Client
from jupyter_pai.backends.models import JobState
from jupyter_pai.errors import Conflict, NotFound, SpecError
from tests.cluster.pytest_plugin import TestCluster
from tests.kube.test_backend_jobs import NS, RUNNER, _cleanup
from tests.kube.test_backend_storage import drop_volume, make_volume

pytestmark = pytest.mark.kube

RANKS = """
name: ranks
instances: 2
command: 'echo "rank $RANK of $WORLD_SIZE says <% $parameters.word %>"; echo done $RANK'
"""


@pytest.fixture
def client(kube_cluster: TestCluster, flavor: str) -> Iterator[Client]:
    _cleanup(kube_cluster, NS)
    config = Config(
        {
            "KubernetesBackend": {
                "kubeconfig": str(kube_cluster.user_kubeconfigs["alice"]),
                "flavor": flavor,
                "user": "alice",
                "node_selector": RUNNER,
            }
        }
    )
    made = Client(backend="kubernetes", config=config)
    yield made
    made.close()
    _cleanup(kube_cluster, NS)


def test_client_runs_a_distributed_job(client: Client) -> None:
    job = client.submit(RANKS, {"word": "hello"})
    assert job.id == "alice~ranks" and job.detail.total_task_number == 2
    lines = {(x.task, x.text) for x in job.output()}
    assert {("worker-0", "rank 0 of 2 says hello"), ("worker-1", "done 1")} <= lines, lines
    followed = "".join(job.logs("worker", 1, follow=True))
    assert "rank 1 of 2 says hello\n" in followed, followed
    assert job.wait(120).state is JobState.SUCCEEDED
    assert "rank 0 of 2 says hello" in job.logs("worker", 0)
    assert [j.id for j in client.jobs(state="SUCCEEDED")] == [job.id]
    assert "Scheduled" in {e.reason for e in job.events()}
    assert {"default", "research"} <= {vc.name for vc in client.vcs()}
    assert client.info().backend == "kubernetes"
    with pytest.raises(Conflict, match="ranks-2"):
        client.submit(RANKS)
    with pytest.raises(NotFound):
        client.job("alice~nothing")
    with pytest.raises(SpecError):
        client.submit("name: x\ncommand: echo\ninstances: 0\n")


async def test_stop_from_a_running_loop(client: Client) -> None:
    """The async twins in a loop (a kernel's): stop a running job, wait for STOPPED."""
    job = await client.submit_async({"name": "sleeper", "command": "echo up; sleep 300"})
    async for text in job.follow_logs_async():
        if "up" in text:
            break
    assert job.state is JobState.RUNNING
    await job.stop_async()
    final = await job.wait_async(60)
    assert final.state is JobState.STOPPED
    assert await asyncio.wait_for(client.jobs_async(state="STOPPED"), 30)


def test_a_notebook_job_needs_a_storage_on_the_cluster(client: Client, tmp_path: Path) -> None:
    """A pod cannot write beside the source on this machine: refused, nothing created."""
    nbformat.write(nbformat.v4.new_notebook(), tmp_path / "nb.ipynb")
    with pytest.raises(SpecError) as refused:
        client.submit_notebook(tmp_path / "nb.ipynb")
    assert refused.value.errors[0].path == "storage"
    assert client.jobs() == []


def test_a_notebook_job_writes_its_executed_copy_into_a_storage(
    kube_cluster: TestCluster, client: Client, tmp_path: Path
) -> None:
    """The pod runs the notebook (parameters injected) and writes the executed copy under
    the claim's mount path, which this machine reads back through the storage API."""
    volume = make_volume(kube_cluster, tmp_path / "storage")
    try:
        nb = nbformat.v4.new_notebook()
        nb.cells = [
            nbformat.v4.new_code_cell("word = 'default'", metadata={"tags": ["parameters"]}),
            nbformat.v4.new_code_cell("print('the word is', word)"),
        ]
        nbformat.write(nb, tmp_path / "analysis.ipynb")
        for _ in range(100):  # the backend's storage list follows the claim's watch
            if volume.claim in {s.name for s in client.storage()}:
                break
            time.sleep(0.2)
        job = client.submit_notebook(
            tmp_path / "analysis.ipynb", {"word": "cluster"}, storage=f"{volume.claim}/runs"
        )
        final = job.wait(180)
        assert final.state is JobState.SUCCEEDED, job.logs("worker", 0)
        assert job.executed_notebook is None  # not in this machine's tree: in the storage
        copy = client.storage(volume.claim, f"runs/{job.detail.name}.ipynb")
        assert isinstance(copy, bytes)
        executed = nbformat.reads(copy.decode(), as_version=4)
        outputs = [o.get("text", "") for c in executed.cells for o in c.get("outputs", [])]
        assert "the word is cluster\n" in outputs, executed.cells
    finally:
        drop_volume(kube_cluster, volume)
