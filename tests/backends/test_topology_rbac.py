"""ClusterTopology -> each backend's topology vocabulary; RBAC rules per configured backends."""

from __future__ import annotations

import json

import pytest

from phalanx.backends import BackendRegistry, rbac_rules
from phalanx.backends.topology import (
    TopologyLevels,
    kai_topology_constraint,
    koordinator_network_topology_annotation,
    volcano_network_topology,
)

from . import samples as s

LEVELS = TopologyLevels.from_cluster_topology(s.cluster_topology())


def test_kai_mapping() -> None:
    assert LEVELS.name == "grove-topology"
    assert LEVELS.kai_topology_spec() == {
        "levels": [
            {"nodeLabel": k, "alias": d}
            for k, d in ((s.ZONE, "zone"), (s.BLOCK, "block"), (s.RACK, "rack"), (s.HOST, "host"))
        ]
    }
    assert kai_topology_constraint("grove-topology", s.ZONE, s.RACK) == {
        "topology": "grove-topology",
        "requiredTopologyLevel": s.ZONE,
        "preferredTopologyLevel": s.RACK,
    }
    assert kai_topology_constraint("grove-topology", None, None) is None


def test_volcano_tiers_count_up_from_the_narrowest_level_above_a_node() -> None:
    assert [LEVELS.volcano_tier(k) for k in (s.ZONE, s.BLOCK, s.RACK, s.HOST)] == [3, 2, 1, None]
    assert volcano_network_topology(LEVELS, s.BLOCK, None) == {"mode": "hard", "highestTierAllowed": 2}
    assert volcano_network_topology(LEVELS, None, s.RACK) == {"mode": "soft", "highestTierAllowed": 1}
    # A required host pack has no tier; it is not silently turned into a soft constraint.
    assert volcano_network_topology(LEVELS, s.HOST, s.RACK) is None
    assert volcano_network_topology(None, s.ZONE, None) is None


def test_koordinator_layers() -> None:
    assert LEVELS.koordinator_network_topology_spec() == {
        "networkTopologySpec": [
            {"topologyLayer": "ZoneTopologyLayer", "labelKey": [s.ZONE]},
            {"topologyLayer": "BlockTopologyLayer", "labelKey": [s.BLOCK], "parentTopologyLayer": "ZoneTopologyLayer"},
            {"topologyLayer": "RackTopologyLayer", "labelKey": [s.RACK], "parentTopologyLayer": "BlockTopologyLayer"},
            {"topologyLayer": "NodeTopologyLayer", "labelKey": [s.HOST], "parentTopologyLayer": "RackTopologyLayer"},
        ]
    }
    encoded = koordinator_network_topology_annotation(LEVELS, s.RACK, s.HOST)
    assert encoded is not None
    assert json.loads(encoded) == {
        "gatherStrategy": [
            {"layer": "RackTopologyLayer", "strategy": "MustGather"},
            {"layer": "NodeTopologyLayer", "strategy": "PreferGather"},
        ]
    }
    assert koordinator_network_topology_annotation(LEVELS, None, None) is None


def test_rbac_follows_the_configured_backends() -> None:
    only_kube = rbac_rules(BackendRegistry.from_profiles([], "default-scheduler"))
    assert only_kube == [
        {
            "apiGroups": ["scheduling.k8s.io"],
            "resources": ["podgroups", "workloads"],
            "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"],
        }
    ]
    groups = [r["apiGroups"][0] for r in rbac_rules(["kai-scheduler", "volcano", "phalanx-scheduler"])]
    # default-scheduler is always enabled; phalanx-scheduler needs nothing extra.
    assert groups == ["kai.scheduler", "scheduling.k8s.io", "scheduling.run.ai",
                      "scheduling.volcano.sh", "topology.volcano.sh"]
    assert "scheduling.sigs.k8s.io" not in groups
    # Each backend may write the topology objects its scheduler reads.
    koord = [r["apiGroups"][0] for r in rbac_rules(["koordinator"])]
    assert koord == ["scheduling.k8s.io", "scheduling.koordinator.sh", "scheduling.sigs.k8s.io"]
    plugins = [(r["apiGroups"][0], r["resources"]) for r in rbac_rules(["scheduler-plugins"])]
    assert ("scheduling.x-k8s.io", ["podgroups"]) in plugins
    with pytest.raises(KeyError, match="unknown scheduler backend 'nope'"):
        rbac_rules(["nope"])
