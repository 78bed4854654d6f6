"""The operator started with Grove's own OperatorConfiguration (issue 22, Grove row of item
4): it starts, and each field set to something Phalanx does not do is named once in a
start-up warning; the topology kinds the server does not serve are not watched."""

from __future__ import annotations

import logging

import pytest

from phalanx.api.config import load_operator_config
from phalanx.cluster.clock import run_virtual
from phalanx.cluster.memory import MemoryCluster
from phalanx.operator import OperatorManager

GROVE = {
    "apiVersion": "operator.config.grove.io/v1alpha1", "kind": "OperatorConfiguration",
    "scheduler": {"profiles": [{"name": "kai-scheduler"}]},
    "authorizer": {"enabled": True}, "clusterTopology": {"enabled": False},
    "network": {"autoMNNVLEnabled": True}, "topologyAwareScheduling": {"enabled": True},
}


def test_groves_config_starts_the_operator_and_names_what_it_ignores(
        caplog: pytest.LogCaptureFixture) -> None:
    async def main() -> None:
        op = OperatorManager(MemoryCluster(), load_operator_config(GROVE))
        await op.start()
        await op.stop()

    with caplog.at_level(logging.INFO, logger="phalanx"):
        run_virtual(main)
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert [w.split(":")[0] for w in warned] == [
        "OperatorConfiguration authorizer.enabled", "OperatorConfiguration clusterTopology"]


class ServesNoLegacyTopology(MemoryCluster):
    """A server with Grove's CRDs only: no legacy ClusterTopology kind."""

    async def serves(self, kind: type) -> bool:
        return kind.KIND != "ClusterTopology"


def test_an_unserved_topology_kind_is_not_watched(caplog: pytest.LogCaptureFixture) -> None:
    async def main() -> list[str]:
        op = OperatorManager(ServesNoLegacyTopology(), load_operator_config(GROVE))
        await op.start()  # does not wait forever on a cache that cannot fill
        kinds = sorted(i.kind.KIND for i in op.manager.informers.informers)
        await op.stop()
        return kinds

    with caplog.at_level(logging.INFO, logger="phalanx"):
        kinds = run_virtual(main)
    assert "ClusterTopologyBinding" in kinds and "ClusterTopology" not in kinds
    assert any("legacy" in r.getMessage() and "clustertopologies" in r.getMessage()
               for r in caplog.records)
