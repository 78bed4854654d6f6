from hypothesis import given, settings
from hypothesis import strategies as st

from phalanx.api.base import ObjectMeta
from phalanx.api.core import Pod, Taint, Toleration
from phalanx.api.pod import Container, PodSpec, ResourceRequirements
from phalanx.sim.clusterspec import RACK_KEY, build_nodes, default_cluster_spec
from phalanx.sim.feasibility import Feasibility, GangNeed, never_fits

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


_TEMPLATES = [
    {"gpu": 8}, {"gpu": 4}, {"gpu": 1, "cpu": "100"}, {"gpu": 16}, {"gpu": 1},
    {"gpu": 1, "node_selector": {"gpu": "b200"}},
    {"gpu": 2, "tolerations": [Toleration(key="nvidia.com/gpu", operator="Exists")]},
]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.lists(st.sampled_from(range(len(_TEMPLATES))), min_size=1, max_size=12),
                          st.sampled_from([None, RACK_KEY])), min_size=1, max_size=12))
def test_one_index_asked_about_many_gangs_answers_as_a_fresh_one_each_time(gangs) -> None:
    """The per-placement caches of `Feasibility` never carry one gang's answer to another."""
    nodes = build_nodes(default_cluster_spec())
    nodes[0].spec.taints = [Taint(key="nvidia.com/gpu", effect="NoSchedule")]
    nodes[1].spec.unschedulable = True
    shared = Feasibility(nodes)
    for i, (members, pack) in enumerate(gangs):
        pods = []
        for j, t in enumerate(members):
            spec = dict(_TEMPLATES[t])
            gpu, cpu = spec.pop("gpu"), spec.pop("cpu", "4")
            pods.append(_pods(1, gpu, cpu, **spec)[0].model_copy(
                update={"metadata": ObjectMeta(name=f"g{i}-p{j}")}))
        need = GangNeed(f"g{i}", pods, pack, "rack" if pack else None)
        assert shared.never_fits(need) == Feasibility(nodes).never_fits(need)


def test_answers_for_one_placement_are_not_reused_for_another() -> None:
    shared = Feasibility(NODES)
    # Same requests, but only the first may use any node.
    assert shared.never_fits(GangNeed("a", _pods(1, 1))) is None
    assert "matches no node" in shared.never_fits(
        GangNeed("b", _pods(1, 1, node_selector={"gpu": "b200"})))
    # A rack holds 16 half-node pods (asked about every rack) but only 8 whole-node ones.
    assert "holds at most 16" in shared.never_fits(GangNeed("c", _pods(17, 4), RACK_KEY, "rack"))
    assert "holds at most 8" in shared.never_fits(GangNeed("d", _pods(9, 8), RACK_KEY, "rack"))
