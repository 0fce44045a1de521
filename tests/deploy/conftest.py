"""The chart's cluster tests run against the real control plane from tests/cluster."""

from tests.cluster.pytest_plugin import kube_cluster

__all__ = ["kube_cluster"]
