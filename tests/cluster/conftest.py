"""Fixtures: `client_factory` builds a fresh `Client`. Tests that only use the Client
protocol take it, so the same tests can later run against a real API server; tests of
embedded-only features (faults, stats, history size) build a MemoryCluster directly."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from phalanx.cluster.client import Client
from phalanx.cluster.memory import MemoryCluster


@pytest.fixture
def client_factory() -> Callable[[], Client]:
    return MemoryCluster
