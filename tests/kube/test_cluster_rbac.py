"""Restricted users are confined to their namespace by the real API server's RBAC."""

from __future__ import annotations

import pytest
from kubernetes.client.exceptions import ApiException

from tests.cluster import kube
from tests.cluster.pytest_plugin import TestCluster

pytestmark = pytest.mark.kube


def _status(call: object) -> int:
    try:
        call()  # type: ignore[operator]
    except ApiException as error:
        return int(error.status)
    return 200


def test_users_cannot_touch_each_others_pods(kube_cluster: TestCluster) -> None:
    admin = kube.core(kube_cluster.api())
    admin.create_namespaced_pod(
        "bob",
        {
            "metadata": {"name": "bobs-pod"},
            "spec": {
                "nodeSelector": {"jupyter-pai.test/pool": "gpu"},
                "containers": [{"name": "main", "image": "python:3"}],
            },
        },
    )
    alice = kube.core(kube_cluster.api("alice"))
    bob = kube.core(kube_cluster.api("bob"))
    try:
        assert _status(lambda: alice.list_namespaced_pod("bob")) == 403
        assert _status(lambda: alice.delete_namespaced_pod("bobs-pod", "bob")) == 403
        assert _status(lambda: alice.read_namespaced_pod_log("bobs-pod", "bob")) == 403
        assert _status(lambda: alice.list_pod_for_all_namespaces()) == 403
        assert _status(lambda: bob.list_namespaced_pod("alice")) == 403
        # Their own namespace and the cluster's nodes are open to them.
        assert _status(lambda: alice.list_namespaced_pod("alice")) == 200
        assert _status(lambda: bob.read_namespaced_pod("bobs-pod", "bob")) == 200
        assert _status(lambda: alice.list_node()) == 200
        assert _status(lambda: alice.delete_node("gpu-0")) == 403
    finally:
        admin.delete_namespaced_pod("bobs-pod", "bob", grace_period_seconds=0)
