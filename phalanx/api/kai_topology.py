"""kai.scheduler/v1alpha1 `Topology`: KAI's copy of a cluster's topology hierarchy.

Cluster-scoped; `spec.levels` lists node-label keys broadest first (an optional `alias`
names the level). A KAI PodGroup's `topologyConstraint.topology` names one of these, and
its required / preferred levels are node-label keys from it. The kai-scheduler backend
mirrors each Grove ClusterTopology into a Topology of the same name.
"""

from __future__ import annotations

from pydantic import Field

from . import registry as _registry
from .base import KubeModel, Resource


class KaiTopologyLevel(KubeModel):
    node_label: str = Field(min_length=1)
    alias: str | None = None


class KaiTopologySpec(KubeModel):
    levels: list[KaiTopologyLevel] = Field(min_length=1)


class KaiTopology(Resource):
    API_VERSION = "kai.scheduler/v1alpha1"
    KIND = "Topology"
    PLURAL = "topologies"
    NAMESPACED = False

    spec: KaiTopologySpec


_registry.register(KaiTopology)
