"""An OpenPAI v1 JSON job on the real control plane (native flavor, pods on the runner node
as processes): converted, gang-scheduled, and every task sees v1's variables while the
workers reach the ps over the host list, as on the local backend."""

from __future__ import annotations

import pytest

from jupyter_pai.backends.kubernetes import KubernetesBackend
from jupyter_pai.backends.kubernetes.naming import make_names
from jupyter_pai.backends.models import JobState
from jupyter_pai.spec import parse_job
from tests.kube.test_backend_jobs import read_log, wait_for
from tests.spec_corpus import EXAMPLES

pytestmark = pytest.mark.kube


async def test_v1_ps_worker_example_runs_with_its_variables(backend: KubernetesBackend) -> None:
    parsed = parse_job((EXAMPLES / "openpai-v1-ps-worker.json").read_text())
    assert parsed.format == "v1"
    submitted = await backend.submit(parsed.job)
    assert submitted.id == "alice~tensorflow-distributed-v1"
    done = await wait_for(backend, submitted.id, lambda d: d.state.terminal, 90)
    assert done.state == JobState.SUCCEEDED, done
    ps = await read_log(backend, done.id, "ps_server", 0)
    assert (
        "ps 0: data=/tmp/openpai-v1/data output=/tmp/openpai-v1/output model=resnet20 "
        "batch_size=32 workers=" in ps
    )
    assert "ps: all 2 workers reported" in ps
    assert sorted(line for line in ps.splitlines() if line.startswith("ps got")) == [
        "ps got worker 0 model resnet20",
        "ps got worker 1 model resnet20",
    ]
    ps_list = next(
        line.split("ps=", 1)[1]
        for line in (await read_log(backend, done.id, "worker", 1)).splitlines()
        if line.startswith("worker 1: data=/tmp/openpai-v1/data model=resnet20 ps=")
    )
    # The host list names the ps by its stable peer name (on the job's headless Service)
    # and its http port.
    service = make_names(parsed.job, "alice").service
    assert ps_list == f"{names_host(ps_list)}:{done.tasks[0].ports['http'][0]}"
    assert names_host(ps_list).endswith("." + service)


def names_host(host_list: str) -> str:
    return host_list.split(",")[0].rsplit(":", 1)[0]
