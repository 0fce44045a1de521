"""Kubernetes tests run against the real control plane from tests/cluster.

``backend`` (a started backend in namespace alice, cleaned up around the test) is shared by
every module here; it and every test that asks for ``flavor`` run once per flavor that runs
end to end (``native``, ``volcano``, ``kueue``). ``exporter`` is the DCGM stand-in that the
utilisation tests' Prometheus scrapes."""

from collections.abc import Iterator

import pytest

from tests.cluster.pytest_plugin import kube_cluster
from tests.kube.test_backend_jobs import backend, flavor
from tests.prometheus import DcgmExporter, dcgm_exporter

__all__ = ["backend", "exporter", "flavor", "kube_cluster"]


@pytest.fixture
def exporter() -> Iterator[DcgmExporter]:
    with dcgm_exporter() as e:
        yield e
