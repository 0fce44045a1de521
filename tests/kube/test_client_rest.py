"""``Client(url=…, token=…)`` against a real Jupyter server whose backend is the test
cluster, once per flavor: following pods' logs through the REST API from before they
run, waiting, stopping and typed errors over HTTP."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from jupyter_pai import Client
from jupyter_pai.backends.models import JobState
from jupyter_pai.errors import Conflict, NotFound
from tests.cluster.pytest_plugin import TestCluster
from tests.kube.rest_server import *  # noqa: F403
from tests.kube.test_backend_jobs import NS, _cleanup

pytestmark = pytest.mark.kube

RANKS = """
name: ranks
instances: 2
command: 'echo "rank $RANK of $WORLD_SIZE says <% $parameters.word %>"'
"""


@pytest.fixture
def client(
    kube_cluster: TestCluster,
    jp_serverapp: Any,
    http_server_client: Any,
    jp_http_port: int,
    jp_base_url: str,
) -> Iterator[Client]:
    _cleanup(kube_cluster, NS)
    made = Client(
        url=f"http://127.0.0.1:{jp_http_port}{jp_base_url}",
        token=jp_serverapp.identity_provider.token,
    )
    yield made
    made.close()
    _cleanup(kube_cluster, NS)


async def test_client_over_rest_on_the_cluster(client: Client) -> None:
    assert (await client.info_async()).backend == "kubernetes"
    job = await client.submit_async(RANKS, {"word": "hi"})
    lines = {(x.task, x.text) async for x in job.output_async()}
    assert lines == {("worker-0", "rank 0 of 2 says hi"), ("worker-1", "rank 1 of 2 says hi")}
    assert (await job.wait_async(120, check=True)).state is JobState.SUCCEEDED
    assert await job.logs_async("worker", 1) == "rank 1 of 2 says hi\n"
    assert [j.id for j in await client.jobs_async(state="SUCCEEDED")] == [job.id]
    with pytest.raises(Conflict, match="ranks-2"):
        await client.submit_async(RANKS)
    with pytest.raises(NotFound):
        await client.job_async("alice~nothing")

    sleeper = await client.submit_async({"name": "sleeper", "command": "echo up; sleep 300"})
    async for text in sleeper.follow_logs_async():
        if "up" in text:
            break
    await sleeper.stop_async()
    assert (await sleeper.wait_async(60)).state is JobState.STOPPED
