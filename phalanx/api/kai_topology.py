"""kai.scheduler/v1alpha1 `Topology`: KAI's copy of a cluster's topology hierarchy.

Cluster-scoped; `spec.levels` lists node-label keys broadest first (1 to 16 of them). As
KAI's CRD says: the levels are immutable, each key appears once, and the host key
(`kubernetes.io/hostname`) may only be the last. A KAI PodGroup's
`topologyConstraint.topology` names one of these, and its required / preferred levels are
node-label keys from it. The kai-scheduler backend mirrors each Grove ClusterTopology into a
Topology of the same name.
"""

from __future__ import annotations

from typing import Self

from pydantic import Field, model_validator

from . import registry as _registry
from .base import KubeModel, Resource
from .scheduling import QUALIFIED_NAME_PATTERN

HOSTNAME_LABEL = "kubernetes.io/hostname"


class KaiTopologyLevel(KubeModel):
    node_label: str = Field(min_length=1, max_length=316, pattern=QUALIFIED_NAME_PATTERN)


class KaiTopologySpec(KubeModel):
    levels: list[KaiTopologyLevel] = Field(min_length=1, max_length=16)

    @model_validator(mode="after")
    def _kai_rules(self) -> Self:
        """The CRD's CEL rules that hold within one object (immutability is the server's)."""
        keys = [lv.node_label for lv in self.levels]
        if len(set(keys)) != len(keys):
            raise ValueError("levels must be unique")
        if HOSTNAME_LABEL in keys[:-1]:
            raise ValueError(f"the {HOSTNAME_LABEL} label can only be used at the lowest "
                             "level of topology")
        return self


class KaiTopology(Resource):
    API_VERSION = "kai.scheduler/v1alpha1"
    KIND = "Topology"
    PLURAL = "topologies"
    NAMESPACED = False

    spec: KaiTopologySpec


_registry.register(KaiTopology)
