"""Kubernetes tests run against the real control plane from tests/cluster.

``backend`` (a started backend in namespace alice, cleaned up around the test) is shared by
every module here; it and every test that asks for ``flavor`` run once per flavour that runs
end to end (``native``, ``volcano``)."""

from tests.cluster.pytest_plugin import kube_cluster
from tests.kube.test_backend_jobs import backend, flavor

__all__ = ["backend", "flavor", "kube_cluster"]
