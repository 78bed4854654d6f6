"""Fixtures: `client_factory` builds a fresh `Client`. Tests that only use the Client
protocol take it, so the same tests can later run against a real API server; tests of
embedded-only features (faults, stats, history size) build a MemoryCluster directly."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from phalanx.cluster.client import Client
from phalanx.cluster.memory import MemoryCluster


# Contract tests that observe in-process timing (what a background controller has done
# between two calls) rather than API semantics; over HTTP the controller can be faster.
_IN_PROCESS_TIMING = {
    "test_background_deletion_collects_dependents_after_the_owner",
}


@pytest.fixture(params=["memory", "kube-facade"])
def client_factory(request: pytest.FixtureRequest) -> Callable[[], Client]:
    """`kube-facade`: KubeCluster over HTTP to a Kubernetes REST facade of a MemoryCluster
    (tests/cluster/kube/facade.py), so every contract test also exercises KubeCluster's
    wire code; tests/cluster/kube/test_envtest.py runs against a real kube-apiserver."""
    if request.param == "memory":
        return MemoryCluster
    if request.node.originalname in _IN_PROCESS_TIMING:
        pytest.skip("observes in-process GC timing, not API semantics")
    from tests.cluster.kube.facade import facade_client

    return facade_client
