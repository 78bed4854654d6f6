"""examples/multinode-aggregated.yaml through the CLI: the 2m scale step adds two scaled gangs."""

from __future__ import annotations

from .helpers import examples_tmp, run_example


def test_multinode_aggregated_scales_from_two_to_four_instances(tmp_path_factory) -> None:
    _, rec, _ = run_example("multinode-aggregated", examples_tmp(tmp_path_factory))
    assert [(s.action, s.ok) for s in rec.steps] == [("scale", True)]
    names = sorted(g.name for g in rec.gangs)
    assert names == ["llm-0", "llm-0-model-1", "llm-0-model-2", "llm-0-model-3"]
    assert all(g.phase == "Running" for g in rec.gangs)
    for added in ("llm-0-model-2", "llm-0-model-3"):
        assert rec.gang(added).created >= 120.0  # made by the 2m scale step
        assert len(rec.gang(added).pods) == 4
