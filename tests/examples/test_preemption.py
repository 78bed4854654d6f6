"""examples/preemption.yaml through the CLI: one low-priority gang evicted whole for the urgent one."""

from __future__ import annotations

import json

from .helpers import examples_tmp, racks_of, run_example


def test_preemption_evicts_one_low_priority_gang_whole_for_the_urgent_one(
        tmp_path_factory) -> None:
    r, rec, _ = run_example("preemption", examples_tmp(tmp_path_factory))
    urgent = rec.gang("urgent-0")
    assert urgent is not None and urgent.phase == "Running"
    assert urgent.scheduled >= 120.0 and len(racks_of(rec, "urgent-0")) == 1
    victims = [g for g in rec.gangs if g.preempted]
    assert [g.podcliqueset for g in victims] == ["batch"]
    victim = victims[0]
    # All or nothing: every pod the victim had bound was evicted, none left running.
    evicted = [p for p in rec.pods if p.gang == victim.name and p.bound is not None
               and p.bound < victim.preempted[0]]
    assert len(evicted) == 8 and all(p.deleted is not None for p in evicted)
    assert victim.phase == "Pending" and victim.nodes == []
    # No low-priority gang is left partly bound.
    for g in rec.gangs:
        live = [p for p in rec.pods if p.gang == g.name and p.deleted is None]
        bound = [p for p in live if p.node]
        assert len(bound) in (0, len(live)), f"{g.name} is partly bound"
    summary = json.loads(r.stdout)
    assert summary["totals"]["preemptions"] == 1
