"""Kubernetes tests run against the real control plane from tests/cluster.

``backend`` (a started backend in namespace alice, cleaned up around the test) is shared by
every module here."""

from tests.cluster.pytest_plugin import kube_cluster
from tests.kube.test_backend_jobs import backend

__all__ = ["backend", "kube_cluster"]
