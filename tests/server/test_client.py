"""``jupyter_pai.Client`` on the local backend (the configured backend, as the CLI uses it)
and on a real Jupyter server's REST API: the same tests, the same answers.

The server runs on the test's loop, so blocking client calls go through ``to_thread`` here
(a kernel's cell would call them directly: the client does its I/O on its own loop)."""

from __future__ import annotations

import asyncio
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest
from traitlets.config import Config

from jupyter_pai import Client
from jupyter_pai.backends.models import JobState, StorageListing
from jupyter_pai.errors import Conflict, NotFound, SpecError
from jupyter_pai.notebook.client import SubmissionWarning

from .pai import wait_for_file

TWO_RANKS = """
name: ranks
instances: 2
command: 'echo "rank $RANK of $WORLD_SIZE says <% $parameters.word %>"; echo done $RANK'
parameters: {word: nothing}
fancy: 1
"""


@pytest.fixture(params=["local", "rest"])
def client(
    request: pytest.FixtureRequest,
    pai_state_dir: Path,
    tmp_path: Path,
    jp_server_config: dict[str, Any],
) -> Iterator[Client]:
    if request.param == "local":
        # What the server of the REST case is configured with (storages, stop grace).
        config = Config({"LocalBackend": jp_server_config["LocalBackend"]})
        made = Client(working_dir=tmp_path, config=config)
    else:
        server = request.getfixturevalue("jp_serverapp")
        request.getfixturevalue("http_server_client")  # listening on jp_http_port
        port = request.getfixturevalue("jp_http_port")
        base = request.getfixturevalue("jp_base_url")
        made = Client(url=f"http://127.0.0.1:{port}{base}", token=server.identity_provider.token)
    yield made
    made.close()


async def test_submit_follow_wait_and_read_back(client: Client, tmp_path: Path) -> None:
    spec = tmp_path / "ranks.yaml"
    spec.write_text(TWO_RANKS)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        job = await asyncio.to_thread(client.submit, spec, {"word": "hello"})
    assert [(w.path, w.message) for w in job.warnings] == [("fancy", "unknown field, ignored")]
    assert [str(w.message) for w in caught if w.category is SubmissionWarning] == [
        f"{job.id}: fancy: unknown field, ignored"
    ]
    assert job.name == "ranks" and job.detail.total_task_number == 2

    followed = await asyncio.to_thread(lambda: "".join(job.logs("worker", 1, follow=True)))
    assert followed == "rank 1 of 2 says hello\ndone 1\n"
    lines = await asyncio.to_thread(lambda: [(x.task, x.text) for x in job.output()])
    for rank in (0, 1):  # each task's lines in order, both tasks there, labelled
        assert [t for t in lines if t[0] == f"worker-{rank}"] == [
            (f"worker-{rank}", f"rank {rank} of 2 says hello"),
            (f"worker-{rank}", f"done {rank}"),
        ]
    final = await asyncio.to_thread(job.wait, 60)
    assert final.state is JobState.SUCCEEDED and job.state is JobState.SUCCEEDED
    assert await asyncio.to_thread(job.logs) == "rank 0 of 2 says hello\ndone 0\n"
    assert await asyncio.to_thread(job.logs, "worker", 0, tail=1) == "done 0\n"
    assert "Scheduled" in {e.reason for e in await asyncio.to_thread(job.events)}

    listed = await asyncio.to_thread(lambda: client.jobs(state="succeeded", keyword="rank"))
    assert [j.id for j in listed] == [job.id]
    assert await asyncio.to_thread(lambda: client.jobs(state=["WAITING", "RUNNING"])) == []
    again = await asyncio.to_thread(client.job, job.id)
    assert again.state is JobState.SUCCEEDED and [t.index for t in again.tasks] == [0, 1]


async def test_async_twins(client: Client) -> None:
    job = await client.submit_async(
        {"name": "twins", "command": "echo one; echo two"}, vc="default", name="twins-a"
    )
    assert job.name == "twins-a" and job.warnings == []
    pieces = [text async for text in job.follow_logs_async()]
    assert "".join(pieces) == "one\ntwo\n"
    assert (await job.wait_async(60)).state is JobState.SUCCEEDED
    assert await job.logs_async() == "one\ntwo\n"
    assert [(x.role, x.index, x.text) async for x in job.output_async()] == [
        ("worker", 0, "one"),
        ("worker", 0, "two"),
    ]
    assert [j.id for j in await client.jobs_async(keyword="twins")] == [job.id]
    assert (await client.job_async(job.id)).detail.exit_code == 0
    assert "Scheduled" in {e.reason for e in await job.events_async()}
    assert [vc.name for vc in await client.vcs_async()] == ["default"]
    assert (await client.info_async()).backend == "local"


async def test_stop_and_wait_timeout(client: Client) -> None:
    job = await client.submit_async(
        {"name": "sleeper", "command": wait_for_file("never-created", 120)}
    )
    with pytest.raises(TimeoutError, match="sleeper"):
        await job.wait_async(timeout=0.5)
    stopping = await job.stop_async()
    assert stopping.state in (JobState.STOPPING, JobState.STOPPED)
    started = time.monotonic()
    assert (await job.wait_async(30)).state is JobState.STOPPED
    assert time.monotonic() - started < 30
    assert await job.refresh_async() == job.detail


async def test_typed_errors(client: Client) -> None:
    with pytest.raises(SpecError) as bad:
        await client.submit_async("name: bad\ncommand: echo\ngpus: -1\n")
    assert [e.path for e in bad.value.errors] == ["gpus"]
    with pytest.raises(NotFound):
        await client.job_async("nobody~nothing")
    await client.submit_async({"name": "once", "command": "true"})
    with pytest.raises(Conflict, match="once-2"):
        await client.submit_async({"name": "once", "command": "true"})
    with pytest.raises(SpecError) as unknown_vc:
        await client.submit_async({"name": "vc", "command": "true"}, vc="nope")
    assert unknown_vc.value.errors[0].path == "defaults.virtualCluster"
    assert "nope" in unknown_vc.value.errors[0].message
    with pytest.raises(SpecError) as state:
        await client.jobs_async(state="sleeping")
    assert state.value.errors[0].path == "state"


async def test_images_and_storage(client: Client, storage_root: Path) -> None:
    (storage_root / "data").mkdir()
    (storage_root / "data" / "a.txt").write_text("alpha\n")
    assert "python-3.11" in [i.name for i in await asyncio.to_thread(client.images)]
    assert [s.name for s in await asyncio.to_thread(client.storage)] == ["work"]
    listing: Any = await asyncio.to_thread(client.storage, "work", "data")
    assert isinstance(listing, StorageListing) and [e.name for e in listing.entries] == ["a.txt"]
    assert await client.storage_async("work", "data/a.txt") == b"alpha\n"
    with pytest.raises(NotFound):
        await client.storage_async("nowhere")


def test_blocking_calls_work_inside_a_running_loop(pai_state_dir: Path, tmp_path: Path) -> None:
    """A kernel cell runs inside the kernel's loop: the blocking API must not need it."""
    client = Client(working_dir=tmp_path)

    async def cell() -> JobState:
        job = client.submit({"name": "in_loop", "command": "echo from a cell"})
        job.wait(60)
        assert job.logs() == "from a cell\n"
        return job.state

    try:
        assert asyncio.run(cell()) is JobState.SUCCEEDED
    finally:
        client.close()


async def test_submit_notebook(client: Client, tmp_path: Path, jp_root_dir: Path) -> None:
    # The path is on this machine for the backend, in the server's tree for a server.
    folder = tmp_path if client.url is None else jp_root_dir
    nb = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell("x = 1"), nbformat.v4.new_code_cell("print('x is', x)")]
    )
    nb.cells[0].metadata["tags"] = ["parameters"]
    nbformat.write(nb, folder / "calc.ipynb")
    job = await asyncio.to_thread(client.submit_notebook, "calc.ipynb", {"x": 41}, name="calc-run")
    expected = str(folder / "calc-run.ipynb") if client.url is None else "calc-run.ipynb"
    assert job.name == "calc-run" and job.executed_notebook == expected
    assert (await job.wait_async(120, check=True)).state is JobState.SUCCEEDED
    executed = nbformat.read(folder / "calc-run.ipynb", as_version=4)
    assert executed.cells[2].outputs[0]["text"] == "x is 41\n"
    with pytest.raises(SpecError, match="submit_notebook"):
        await client.submit_async("calc.ipynb")


async def test_a_notebooks_gpu_type_reaches_its_job(
    client: Client, tmp_path: Path, jp_root_dir: Path
) -> None:
    """Through the backend and through the REST API alike; the local backend's GPUs have
    no types, so it says the type is not placed."""
    folder = tmp_path if client.url is None else jp_root_dir
    nbformat.write(
        nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("1")]), folder / "t.ipynb"
    )
    job = await asyncio.to_thread(
        client.submit_notebook, "t.ipynb", gpus=1, gpu_type="A100-40GB", name="typed-nb"
    )
    assert (
        job.detail.spec["extras"]["hivedScheduler"]["taskRoles"]["worker"]["skuType"] == "A100-40GB"
    )
    assert any("'A100-40GB' is not placed" in w.message for w in job.warnings)
    await job.wait_async(120)
