"""examples/multinode-aggregated.yaml through the CLI: the 2m scale step adds two scaled gangs."""

from __future__ import annotations

from .helpers import examples_tmp, run_example


def test_multinode_aggregated_scales_from_two_to_four_instances(tmp_path_factory) -> None:
    _, rec, _ = run_example("multinode-aggregated", examples_tmp(tmp_path_factory))
    assert [(s.action, s.ok) for s in rec.steps] == [("scale", True)]
    names = sorted(g.name for g in rec.gangs)
    # Scaled gangs are named by their offset above minAvailable (1), as in Grove: replica j
    # of the group is gang llm-0-model-(j-1).
    assert names == ["llm-0", "llm-0-model-0", "llm-0-model-1", "llm-0-model-2"]
    assert all(g.phase == "Running" for g in rec.gangs)
    for added in ("llm-0-model-1", "llm-0-model-2"):
        assert rec.gang(added).created >= 120.0  # made by the 2m scale step
        assert len(rec.gang(added).pods) == 4


def test_each_model_instance_sits_in_one_block(tmp_path_factory) -> None:
    _, rec, _ = run_example("multinode-aggregated", examples_tmp(tmp_path_factory))
    block = "topology.phalanx.dev/block"
    for k in range(3):
        g = rec.gang(f"llm-0-model-{k}")
        assert len({rec.node(n).labels[block] for n in g.nodes}) == 1, g.name
    # Instance 0 lives in the base gang with the router: its leader and workers share a block.
    base = [p for p in rec.pods if p.gang == "llm-0" and "-model-0-" in p.name
            and p.deleted is None]
    assert len(base) == 4
    assert len({rec.node(p.node).labels[block] for p in base}) == 1
