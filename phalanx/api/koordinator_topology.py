"""scheduling.koordinator.sh/v1alpha1 `ClusterNetworkTopology`: Koordinator's layers.

Cluster-scoped; koord-scheduler reads only the one named `default`. Each entry of
`spec.networkTopologySpec` names a layer, its parent layer and the node-label keys whose value
names a node's domain in it (any of them). The chain must start at the built-in
`NodeTopologyLayer` (one domain per node) and climb through `parentTopologyLayer` to the
broadest layer, which has no parent. Gang annotations name these layers
(`gang.scheduling.koordinator.sh/network-topology-spec`); the koordinator backend writes the
layers of the Grove ClusterTopology they come from. koord-scheduler fills the status.
"""

from __future__ import annotations

from pydantic import Field

from . import registry as _registry
from .base import KubeModel, Resource

NODE_TOPOLOGY_LAYER = "NodeTopologyLayer"
CLUSTER_TOPOLOGY_LAYER = "ClusterTopologyLayer"
DEFAULT_NETWORK_TOPOLOGY = "default"  # the only one koord-scheduler reads


class NetworkTopologyLayer(KubeModel):
    topology_layer: str
    parent_topology_layer: str | None = None
    label_key: list[str] | None = None


class ClusterNetworkTopologySpec(KubeModel):
    network_topology_spec: list[NetworkTopologyLayer]


class TopologyInfo(KubeModel):
    topology_layer: str
    topology_name: str


class NetworkTopologyDetailStatus(KubeModel):
    topology_info: TopologyInfo
    parent_topology_info: TopologyInfo | None = None
    child_topology_layer: str | None = None
    child_topology_names: list[str] | None = None
    node_num: int


class ClusterNetworkTopologyStatus(KubeModel):
    detail_status: list[NetworkTopologyDetailStatus] | None = None


class ClusterNetworkTopology(Resource):
    API_VERSION = "scheduling.koordinator.sh/v1alpha1"
    KIND = "ClusterNetworkTopology"
    PLURAL = "clusternetworktopologies"
    NAMESPACED = False
    HAS_STATUS = True

    spec: ClusterNetworkTopologySpec | None = None
    status: ClusterNetworkTopologyStatus = Field(default_factory=ClusterNetworkTopologyStatus)


_registry.register(ClusterNetworkTopology)
