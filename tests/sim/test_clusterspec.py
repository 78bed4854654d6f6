import pytest
from pydantic import ValidationError

from phalanx.sim.clusterspec import (
    BLOCK_KEY, HOSTNAME_KEY, RACK_KEY, ClusterSpec, build_nodes, default_cluster_spec,
)


def test_default_cluster_is_64_nodes_of_8_gpus_in_8_racks() -> None:
    nodes = build_nodes(default_cluster_spec())
    assert len(nodes) == 64
    assert {n.allocatable_resources()["nvidia.com/gpu"] for n in nodes} == {8.0}
    racks = {n.metadata.labels[RACK_KEY] for n in nodes}
    assert racks == {f"rack-{i}" for i in range(8)}
    # Consecutive nodes share a rack, and racks nest in blocks.
    assert nodes[7].metadata.labels[RACK_KEY] == "rack-0"
    assert nodes[8].metadata.labels[RACK_KEY] == "rack-1"
    assert nodes[31].metadata.labels[BLOCK_KEY] == "block-0"
    assert nodes[32].metadata.labels[BLOCK_KEY] == "block-1"
    assert all(n.metadata.labels[HOSTNAME_KEY] == n.name for n in nodes)
    assert all(n.is_ready for n in nodes)


def _spec(pools: list[dict], topology: list[dict] | None = None) -> ClusterSpec:
    return ClusterSpec.model_validate({
        "apiVersion": "sim.phalanx.dev/v1alpha1", "kind": "ClusterSpec",
        "metadata": {"name": "t"},
        "spec": {"topology": topology if topology is not None else [
            {"domain": "rack", "key": RACK_KEY}, {"domain": "host", "key": HOSTNAME_KEY}],
                 "nodePools": pools},
    })


def test_pools_number_domains_after_each_other_and_keep_taints() -> None:
    spec = _spec([
        {"name": "a100", "count": 4, "allocatable": {"cpu": "64", "nvidia.com/gpu": 4},
         "nodesPer": {"rack": 2}},
        {"name": "cpu", "count": 3, "allocatable": {"cpu": "32", "memory": "128Gi"},
         "nodesPer": {"rack": 2},
         "taints": [{"key": "dedicated", "value": "cpu", "effect": "NoSchedule"}]},
    ])
    nodes = build_nodes(spec)
    assert [n.name for n in nodes] == ["a100-000", "a100-001", "a100-002", "a100-003",
                                       "cpu-000", "cpu-001", "cpu-002"]
    assert [n.metadata.labels[RACK_KEY] for n in nodes] == [
        "rack-0", "rack-0", "rack-1", "rack-1", "rack-2", "rack-2", "rack-3"]
    assert nodes[-1].spec.taints[0].key == "dedicated"
    assert nodes[0].spec.taints is None


@pytest.mark.parametrize(("pools", "topology", "message"), [
    ([{"name": "a", "count": 0, "allocatable": {"cpu": "1"}}], None, "no nodes"),
    ([{"name": "a", "count": 2, "allocatable": {"cpu": "lots"}}], None, "invalid quantity"),
    ([{"name": "a", "count": 8, "allocatable": {"cpu": "1"}, "nodesPer": {"row": 2}}], None,
     "not a topology domain"),
    ([{"name": "a", "count": 8, "allocatable": {"cpu": "1"},
       "nodesPer": {"rack": 3, "block": 4}}],
     [{"domain": "block", "key": "b"}, {"domain": "rack", "key": "r"}], "straddle"),
    ([{"name": "a", "count": 1, "allocatable": {"cpu": "1"}},
      {"name": "a", "count": 1, "allocatable": {"cpu": "1"}}], None, "unique"),
])
def test_bad_specs_say_what_is_wrong(pools: list[dict], topology: list[dict] | None,
                                     message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        _spec(pools, topology)


def test_nodes_carry_the_labels_a_kubelet_gives_them() -> None:
    """kubelet's default labels (os and arch, stable and beta) are what manifests select on
    (`nodeSelector: {kubernetes.io/os: linux}`); a pool's own labels win."""
    default = build_nodes(default_cluster_spec())[0].metadata.labels
    assert {k: default[k] for k in ("kubernetes.io/os", "kubernetes.io/arch",
                                    "beta.kubernetes.io/os", "beta.kubernetes.io/arch")} == {
        "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
        "beta.kubernetes.io/os": "linux", "beta.kubernetes.io/arch": "amd64"}
    arm = _spec([{"name": "arm", "count": 1, "allocatable": {"cpu": "1"},
                  "labels": {"kubernetes.io/arch": "arm64"}}])
    labels = build_nodes(arm)[0].metadata.labels
    # The kubelet writes the beta label from the same value.
    assert (labels["kubernetes.io/arch"], labels["beta.kubernetes.io/arch"]) == ("arm64", "arm64")
    odd = _spec([{"name": "odd", "count": 1, "allocatable": {"cpu": "1"},
                  "labels": {"kubernetes.io/os": "windows", "beta.kubernetes.io/os": "linux"}}])
    labels = build_nodes(odd)[0].metadata.labels
    assert (labels["kubernetes.io/os"], labels["beta.kubernetes.io/os"]) == ("windows", "linux")


GPU_POOL = {"name": "g", "count": 2, "allocatable": {"cpu": "8", "nvidia.com/gpu": "2"}}


@pytest.mark.parametrize(("labels", "dra", "named", "why"), [
    ({RACK_KEY: "my-rack"}, None, RACK_KEY, 'set by the topology level "rack"'),
    ({HOSTNAME_KEY: "h"}, None, HOSTNAME_KEY, "always the node's name"),
    ({"sim.phalanx.dev/node-pool": "other"}, None, "sim.phalanx.dev/node-pool",
     "simulated DRA driver"),
    ({"nvidia.com/gpu.clique": "x.0"}, {}, "nvidia.com/gpu.clique", "NVLink clique"),
])
def test_pool_labels_the_simulation_sets_itself_are_refused(
        labels: dict, dra: dict | None, named: str, why: str) -> None:
    """They were silently replaced (topology, hostname), or cut the nodes off their pool's
    DRA GPUs (the pool label): refused, naming the label."""
    pool = {**GPU_POOL, "labels": labels, **({"dra": dra} if dra is not None else {})}
    with pytest.raises(ValidationError) as err:
        _spec([pool])
    assert f"nodePools[0].labels[{named}]: " in str(err.value) and why in str(err.value)


def test_other_pool_labels_are_kept() -> None:
    """The clique label is the pool's own without a simulated DRA driver, as is any other."""
    spec = _spec([{**GPU_POOL, "labels": {"nvidia.com/gpu.clique": "x.0", "team": "a"}}])
    labels = build_nodes(spec)[0].metadata.labels
    assert (labels["nvidia.com/gpu.clique"], labels["team"]) == ("x.0", "a")


@pytest.mark.parametrize(("dra", "field", "message"), [
    ({"memory": "eighty"}, "memory", "invalid quantity"),
    ({"memory": "0"}, "memory", "positive quantity"),
    ({"cudaComputeCapability": "9.0"}, "cudaComputeCapability", "semantic version"),
    ({"driverVersion": "abc"}, "driverVersion", "semantic version"),
    ({"productName": "x" * 65}, "productName", "at most 64 characters"),
    ({"driver": "GPU_NVIDIA"}, "driver", "pattern"),
])
def test_dra_values_are_what_a_resource_slice_may_hold(dra: dict, field: str,
                                                       message: str) -> None:
    """Checked when the spec is read: before, the driver retried forever (memory) or every
    scheduling cycle crashed (versions) and the run went on for 24h of virtual time."""
    with pytest.raises(ValidationError) as err:
        _spec([{**GPU_POOL, "dra": dra}])
    [problem] = err.value.errors()
    assert problem["loc"][-1] in (field, _snake(field)) and problem["loc"][-2] == "dra"
    assert message in str(err.value)


def _snake(name: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in name)


def test_the_default_dra_values_load() -> None:
    spec = _spec([{**GPU_POOL, "dra": {"cudaComputeCapability": "10.0.0",
                                       "driverVersion": "570.86.15", "memory": "180Gi"}}])
    assert spec.spec.node_pools[0].dra is not None


def test_every_node_reports_ephemeral_storage_as_a_kubelet_does() -> None:
    """A kubelet always reports ephemeral storage: a pod asking for some must not wait for
    ever on a cluster whose pools did not think to size it; a pool's own value wins."""
    assert build_nodes(default_cluster_spec())[0].status.allocatable["ephemeral-storage"] \
        == "500Gi"
    sized = _spec([{"name": "a", "count": 1,
                    "allocatable": {"cpu": "1", "ephemeral-storage": "2Ti"}}])
    assert build_nodes(sized)[0].status.allocatable["ephemeral-storage"] == "2Ti"
