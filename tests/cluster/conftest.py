"""Fixtures: `client_factory` builds a fresh `Client`. Tests that only use the Client
protocol take it, so the same tests can later run against a real API server; tests of
embedded-only features (faults, stats, history size) build a MemoryCluster directly."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from phalanx.cluster.client import Client
from phalanx.cluster.memory import MemoryCluster


@pytest.fixture(params=["memory", "kube-facade"])
def client_factory(request: pytest.FixtureRequest) -> Callable[[], Client]:
    """`kube-facade`: KubeCluster over HTTP to a Kubernetes REST facade of a MemoryCluster
    (tests/cluster/kube/facade.py), so every contract test also exercises KubeCluster's
    wire code; tests/cluster/kube/test_envtest.py runs against a real kube-apiserver."""
    if request.param == "memory":
        return MemoryCluster
    from tests.cluster.kube.facade import facade_client

    return facade_client
