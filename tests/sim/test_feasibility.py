from phalanx.api.base import ObjectMeta
from phalanx.api.core import Pod, Taint, Toleration
from phalanx.api.pod import Container, PodSpec, ResourceRequirements
from phalanx.sim.clusterspec import RACK_KEY, build_nodes, default_cluster_spec
from phalanx.sim.feasibility import GangNeed, never_fits

NODES = build_nodes(default_cluster_spec())


def _pods(n: int, gpu: int, cpu: str = "4", **spec: object) -> list[Pod]:
    return [Pod(metadata=ObjectMeta(name=f"p-{i}"), spec=PodSpec(
        containers=[Container(name="c", resources=ResourceRequirements.from_requests(
            {"cpu": cpu, "nvidia.com/gpu": str(gpu)}))], **spec)) for i in range(n)]


def test_a_rack_sized_gang_fits_and_one_more_pod_never_does() -> None:
    assert never_fits(GangNeed("g", _pods(8, 8), RACK_KEY, "rack"), NODES) is None
    why = never_fits(GangNeed("g", _pods(9, 8), RACK_KEY, "rack"), NODES)
    assert why == ("it needs 9 pods of 4 cpu, 8 nvidia.com/gpu in one rack (required pack "
                   "constraint); the largest rack (8 nodes) holds at most 8")


def test_per_node_and_whole_cluster_limits() -> None:
    assert "largest node it may use has 8 nvidia.com/gpu" in never_fits(
        GangNeed("g", _pods(1, 16)), NODES)
    assert "all nodes together hold at most 64" in never_fits(GangNeed("g", _pods(65, 8)), NODES)
    # Half-node pods pack two per node: 128 fit, 129 do not.
    assert never_fits(GangNeed("g", _pods(128, 4)), NODES) is None
    assert never_fits(GangNeed("g", _pods(129, 4)), NODES) is not None


def test_selectors_and_taints_rule_nodes_out() -> None:
    why = never_fits(GangNeed("g", _pods(1, 1, node_selector={"gpu": "b200"})), NODES)
    assert "matches no node" in why
    tainted = build_nodes(default_cluster_spec())
    for n in tainted:
        n.spec.taints = [Taint(key="nvidia.com/gpu", effect="NoSchedule")]
    assert "matches no node" in never_fits(GangNeed("g", _pods(1, 1)), tainted)
    ok = _pods(1, 1, tolerations=[Toleration(key="nvidia.com/gpu", operator="Exists")])
    assert never_fits(GangNeed("g", ok), tainted) is None
