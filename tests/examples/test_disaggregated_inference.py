"""examples/disaggregated-inference.yaml through the CLI: every gang scheduled, group replicas rack-packed."""

from __future__ import annotations

from .helpers import RACK, examples_tmp, racks_of, run_example


def test_disaggregated_inference_schedules_every_gang_with_each_group_replica_in_a_rack(
        tmp_path_factory) -> None:
    r, rec, _ = run_example("disaggregated-inference", examples_tmp(tmp_path_factory))
    assert {g.name for g in rec.gangs} == {
        "inference-0", "inference-0-prefill-0", "inference-0-decode-0"}  # replicas 1
    assert all(g.scheduled is not None and g.phase == "Running" for g in rec.gangs)
    # Scaled gangs wait for the base gang (GREP-375), so they are scheduled after it.
    base = rec.gang("inference-0")
    for scaled in ("inference-0-prefill-0", "inference-0-decode-0"):
        assert rec.gang(scaled).scheduled >= base.scheduled
        assert len(racks_of(rec, scaled)) == 1
    # In the base gang, each scaling-group replica (leader + workers) shares one rack.
    pods = {p.name: p for p in rec.pods if p.gang == "inference-0" and p.deleted is None}
    for group in ("prefill", "decode"):
        racks = {rec.node(p.node).labels[RACK] for p in pods.values() if f"-{group}-" in p.name}
        assert len(racks) == 1, f"{group} replica 0 spans {racks}"
    frontends = [p for p in pods.values() if "frontend" in p.name]
    assert len(frontends) == 2 and all(p.gpu == 0 and p.phase == "Running" for p in frontends)
