"""`ClusterSpec`: the simulated cluster a run starts with (node pools and their topology).

    apiVersion: sim.phalanx.dev/v1alpha1
    kind: ClusterSpec
    metadata: {name: h100-64}
    spec:
      topology:                 # broadest first; node label keys for each level
      - {domain: zone,  key: topology.kubernetes.io/zone}
      - {domain: block, key: topology.phalanx.dev/block}
      - {domain: rack,  key: topology.phalanx.dev/rack}
      - {domain: host,  key: kubernetes.io/hostname}
      kubelet: {startDelay: 5s}   # bound pods run (and turn Ready) this long after binding
      nodePools:
      - name: h100
        count: 64
        allocatable: {cpu: "128", memory: 2Ti, nvidia.com/gpu: "8", pods: "110"}
        nodesPer: {rack: 8, block: 32}   # consecutive nodes fill a rack, racks fill a block
        labels: {node.kubernetes.io/instance-type: p5.48xlarge}
        taints: [{key: nvidia.com/gpu, effect: NoSchedule}]

Domains are numbered across pools (a second pool's first rack follows the first pool's last),
so pools never share a rack by accident. The `host` level is always the node's name.
"""

from __future__ import annotations

from typing import Annotated, ClassVar, Self

from pydantic import Field, StringConstraints, field_validator, model_validator

from phalanx.api.base import KubeModel, ObjectMeta, Resource
from phalanx.api.core import Node, NodeCondition, NodeSpec, NodeStatus, Taint
from phalanx.api.duration import parse_duration
from phalanx.api.quantity import parse_quantity

SIM_API_VERSION = "sim.phalanx.dev/v1alpha1"
HOSTNAME_KEY = "kubernetes.io/hostname"
# What a node reports when its pool does not say (a kubelet always reports ephemeral storage,
# the size of its root filesystem): pods asking for some are not Pending for ever.
EPHEMERAL_STORAGE, DEFAULT_EPHEMERAL_STORAGE = "ephemeral-storage", "500Gi"
# What a kubelet on linux/amd64 labels its Node with besides the hostname (kubelet's
# updateDefaultLabels): manifests select on them (`nodeSelector: {kubernetes.io/os: linux}`).
# A pool's own `labels` override them (say, arm64 nodes); a beta label follows its stable
# one unless the pool sets it too, as the kubelet writes both from one value.
KUBELET_LABELS = {
    "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
    "beta.kubernetes.io/os": "linux", "beta.kubernetes.io/arch": "amd64",
}
ZONE_KEY = "topology.kubernetes.io/zone"
BLOCK_KEY = "topology.phalanx.dev/block"
RACK_KEY = "topology.phalanx.dev/rack"
POOL_LABEL = "sim.phalanx.dev/node-pool"
GPU = "nvidia.com/gpu"
# NVIDIA GPU feature discovery's node label for the NVLink clique: "<cluster uuid>.<clique>".
CLIQUE_LABEL = "nvidia.com/gpu.clique"

Name = Annotated[str, StringConstraints(min_length=1, max_length=63,
                                        pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")]


class ClusterTopologyLevel(KubeModel):
    domain: Name
    key: Annotated[str, StringConstraints(min_length=1, max_length=316)]


# A ResourceSlice's string and version attribute values are at most 64 characters
# (kube's DeviceAttributeMaxValueLength); a version is a semantic version (semver.Parse).
ATTRIBUTE_MAX_LENGTH = 64
DNS_SUBDOMAIN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"


class DraGpus(KubeModel):
    """A simulated DRA driver on the pool's nodes (phalanx/sim/dradriver.py): one
    ResourceSlice per node with its GPUs as devices, attributes named as NVIDIA's DRA driver
    names them (productName, index, uuid, architecture, cudaComputeCapability,
    driverVersion, memory capacity) plus `cliqueID`, the NVLink domain. Consecutive
    `nvlinkDomainNodes` nodes share a clique; nodes also carry it as the label
    `nvidia.com/gpu.clique` (as NVIDIA's GPU feature discovery does), so a gang may pack on
    it. The GPUs leave the node's `nvidia.com/gpu` allocatable unless
    `keepExtendedResource` (a GPU is handed out one way, not both)."""

    # What the driver publishes must be what a ResourceSlice may hold, checked when the
    # spec is read: the driver a DNS subdomain (it also names the DeviceClass), memory a
    # quantity, the versions semantic versions (9.0.0, not 9.0), strings <= 64 characters.
    driver: str = Field(default="gpu.nvidia.com", max_length=63, pattern=DNS_SUBDOMAIN)
    count: int | None = Field(default=None, ge=0, le=128)  # default: nvidia.com/gpu
    product_name: str = Field(default="NVIDIA H100 80GB HBM3", max_length=ATTRIBUTE_MAX_LENGTH)
    memory: str = "80Gi"
    architecture: str = Field(default="Hopper", max_length=ATTRIBUTE_MAX_LENGTH)
    cuda_compute_capability: str = "9.0.0"
    driver_version: str = "550.90.7"
    nvlink_domain_nodes: int = Field(default=1, ge=1)
    keep_extended_resource: bool = False

    @field_validator("memory")
    @classmethod
    def _quantity(cls, v: str) -> str:
        if parse_quantity(v) <= 0:  # ValueError: not a quantity
            raise ValueError(f"must be a positive quantity such as 80Gi, got {v!r}")
        return v

    @field_validator("cuda_compute_capability", "driver_version")
    @classmethod
    def _semver(cls, v: str) -> str:
        from phalanx.api.devicecel import parse_semver

        try:
            parse_semver(v)
        except ValueError:
            raise ValueError(f"must be a semantic version such as 9.0.0 (major.minor.patch, "
                             f"as a ResourceSlice's version attributes are), got {v!r}") \
                from None
        if len(v) > ATTRIBUTE_MAX_LENGTH:
            raise ValueError(f"must be at most {ATTRIBUTE_MAX_LENGTH} characters")
        return v


class NodePool(KubeModel):
    name: Name
    count: int = Field(ge=0, le=100_000)
    # Node names are "<namePrefix>-<index>" (zero padded); default: the pool name.
    name_prefix: Name | None = None
    allocatable: dict[str, str | int | float]
    labels: dict[str, str] = Field(default_factory=dict)
    taints: list[Taint] = Field(default_factory=list)
    # How many consecutive nodes share one domain of each (non-host) level.
    nodes_per: dict[str, int] = Field(default_factory=dict)
    # GPUs published as DRA devices by a simulated driver (None: no DRA on this pool).
    dra: DraGpus | None = None

    @field_validator("allocatable")
    @classmethod
    def _quantities(cls, v: dict[str, str | int | float]) -> dict[str, str | int | float]:
        for name, q in v.items():
            try:
                if parse_quantity(q) < 0:
                    raise ValueError("must not be negative")
            except ValueError as e:
                raise ValueError(f"{name}: {e}") from None
        return v

    @field_validator("nodes_per")
    @classmethod
    def _positive(cls, v: dict[str, int]) -> dict[str, int]:
        for level, n in v.items():
            if n < 1:
                raise ValueError(f"{level}: must be at least 1 node per domain, got {n}")
        return v


class KubeletSettings(KubeModel):
    """How the simulated kubelet behaves on every node."""

    # From binding to Running/Ready (image pull, container start), a Go duration.
    start_delay: str = "5s"

    @field_validator("start_delay")
    @classmethod
    def _duration(cls, v: str) -> str:
        if parse_duration(v) < 0:
            raise ValueError("must not be negative")
        return v

    @property
    def start_delay_seconds(self) -> float:
        return parse_duration(self.start_delay)


class ClusterSpecSpec(KubeModel):
    topology: list[ClusterTopologyLevel] = Field(default_factory=list, max_length=7)
    node_pools: list[NodePool] = Field(min_length=1)
    kubelet: KubeletSettings = Field(default_factory=KubeletSettings)

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        domains = [t.domain for t in self.topology]
        if len(set(domains)) != len(domains):
            raise ValueError("topology: each domain may appear only once")
        keys = [t.key for t in self.topology]
        if len(set(keys)) != len(keys):
            raise ValueError("topology: each node label key may appear only once")
        names = [p.name for p in self.node_pools]
        if len(set(names)) != len(names):
            raise ValueError("nodePools: pool names must be unique")
        if sum(p.count for p in self.node_pools) == 0:
            raise ValueError("nodePools: the cluster has no nodes (every count is 0)")
        for i, pool in enumerate(self.node_pools):
            _check_nesting(i, pool, domains)
            _check_labels(i, pool, self.topology)
        return self


def _check_labels(i: int, pool: NodePool, topology: list[ClusterTopologyLevel]) -> None:
    """Labels the simulation sets on every node itself: a pool's value would be replaced
    (the topology levels, the hostname), or would cut the node off its pool (the DRA
    driver finds a node's GPUs by its pool label)."""
    set_by = {lvl.key: f'set by the topology level "{lvl.domain}" (size it with '
                       f'nodesPer.{lvl.domain})' for lvl in topology}
    set_by[HOSTNAME_KEY] = "always the node's name"
    set_by[POOL_LABEL] = "the pool's name, by which the simulated DRA driver finds a " \
                         "node's GPUs"
    if pool.dra is not None:
        set_by[CLIQUE_LABEL] = "the NVLink clique the simulated DRA driver sets (size it " \
                               "with dra.nvlinkDomainNodes)"
    for key in pool.labels:
        if key in set_by:
            raise ValueError(f"nodePools[{i}].labels[{key}]: {set_by[key]}; a pool cannot "
                             "set it")


def _check_nesting(i: int, pool: NodePool, domains: list[str]) -> None:
    """A rack must sit inside one block: each level's size divides the next broader one."""
    where = f"nodePools[{i}].nodesPer"
    for level, n in pool.nodes_per.items():
        if level not in domains:
            raise ValueError(f"{where}.{level}: not a topology domain ({', '.join(domains)})")
        if _is_host(level) and n != 1:
            raise ValueError(f"{where}.{level}: the host level always has 1 node per domain")
    sized = [(d, pool.nodes_per[d]) for d in domains if d in pool.nodes_per]
    for (narrow, n_narrow), (broad, n_broad) in zip(sized[::-1], sized[::-1][1:]):
        if n_broad % n_narrow:
            raise ValueError(
                f"{where}: {broad} has {n_broad} nodes, not a multiple of {narrow}'s "
                f"{n_narrow}, so a {narrow} would straddle two {broad}s"
            )


def _is_host(domain: str) -> bool:
    return domain in ("host", "hostname", "node")


class ClusterSpec(Resource):
    API_VERSION: ClassVar[str] = SIM_API_VERSION
    KIND: ClassVar[str] = "ClusterSpec"
    PLURAL: ClassVar[str] = "clusterspecs"
    NAMESPACED: ClassVar[bool] = False

    spec: ClusterSpecSpec

    def node_count(self) -> int:
        return sum(p.count for p in self.spec.node_pools)


def default_cluster_spec() -> ClusterSpec:
    """64 nodes of 8 GPUs: 8 racks of 8 nodes, 2 blocks of 4 racks, one zone."""
    return ClusterSpec(
        metadata=ObjectMeta(name="default-64xh100"),
        spec=ClusterSpecSpec(
            topology=default_topology(),
            node_pools=[
                NodePool(
                    name="gpu",
                    name_prefix="node",
                    count=64,
                    allocatable={"cpu": "128", "memory": "2Ti", GPU: "8", "pods": "110"},
                    nodes_per={"zone": 64, "block": 32, "rack": 8},
                    labels={"node.kubernetes.io/instance-type": "sim-8xh100"},
                )
            ],
        ),
    )


def default_topology() -> list[ClusterTopologyLevel]:
    return [
        ClusterTopologyLevel(domain="zone", key=ZONE_KEY),
        ClusterTopologyLevel(domain="block", key=BLOCK_KEY),
        ClusterTopologyLevel(domain="rack", key=RACK_KEY),
        ClusterTopologyLevel(domain="host", key=HOSTNAME_KEY),
    ]


def build_nodes(spec: ClusterSpec) -> list[Node]:
    """The Node objects of a cluster spec: Ready, labelled for every topology level."""
    levels = spec.spec.topology
    next_domain = {lvl.domain: 0 for lvl in levels}  # numbering continues across pools
    nodes: list[Node] = []
    for pool in spec.spec.node_pools:
        prefix = pool.name_prefix or pool.name
        width = max(3, len(str(max(pool.count - 1, 0))))
        first = dict(next_domain)
        for i in range(pool.count):
            name = f"{prefix}-{i:0{width}d}"
            labels = {POOL_LABEL: pool.name, **KUBELET_LABELS, HOSTNAME_KEY: name,
                      **_beta_follows_stable(pool.labels), **pool.labels}
            for lvl in levels:
                if _is_host(lvl.domain) or lvl.key == HOSTNAME_KEY:
                    labels[lvl.key] = name
                    continue
                # Unsized levels hold the whole pool (one domain per pool).
                size = pool.nodes_per.get(lvl.domain, max(pool.count, 1))
                labels[lvl.key] = f"{lvl.domain}-{first[lvl.domain] + i // size}"
            # A kubelet always reports its node's ephemeral storage; a pool may size it.
            capacity = {EPHEMERAL_STORAGE: DEFAULT_EPHEMERAL_STORAGE,
                        **{k: str(v) for k, v in pool.allocatable.items()}}
            if pool.dra is not None:
                labels[CLIQUE_LABEL] = clique_id(pool.name, i // pool.dra.nvlink_domain_nodes)
                if not pool.dra.keep_extended_resource:
                    capacity.pop(GPU, None)
            nodes.append(
                Node(
                    metadata=ObjectMeta(name=name, labels=labels),
                    spec=NodeSpec(taints=[t.model_copy() for t in pool.taints] or None),
                    status=NodeStatus(
                        capacity=dict(capacity),
                        allocatable=dict(capacity),
                        conditions=[
                            NodeCondition(type="Ready", status="True", reason="KubeletReady",
                                          message="simulated kubelet is posting ready status")
                        ],
                    ),
                )
            )
        for lvl in levels:
            size = pool.nodes_per.get(lvl.domain, max(pool.count, 1))
            next_domain[lvl.domain] += -(-pool.count // size) if pool.count else 0
    return nodes


def _beta_follows_stable(labels: dict[str, str]) -> dict[str, str]:
    return {f"beta.{key}": labels[key] for key in ("kubernetes.io/os", "kubernetes.io/arch")
            if key in labels}


def clique_id(pool: str, n: int) -> str:
    """A clique id as NVIDIA formats it ("<cluster uuid>.<clique id>"), stable per pool."""
    import uuid

    return f"{uuid.uuid5(uuid.NAMESPACE_DNS, 'phalanx-sim-' + pool)}.{n}"


def dra_pools(spec: ClusterSpec) -> dict[str, DraGpus]:
    """Pool name -> its simulated DRA GPUs, with `count` resolved (nvidia.com/gpu)."""
    out: dict[str, DraGpus] = {}
    for pool in spec.spec.node_pools:
        if pool.dra is None:
            continue
        count = pool.dra.count
        if count is None:
            count = int(parse_quantity(pool.allocatable.get(GPU, 0)))
        out[pool.name] = pool.dra.model_copy(update={"count": count})
    return out
