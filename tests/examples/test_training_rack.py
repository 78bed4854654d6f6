"""examples/training-rack.yaml through the CLI: each replica in one rack, completes after 30m."""

from __future__ import annotations

import json

from .helpers import examples_tmp, racks_of, run_example


def test_training_job_packs_each_replica_into_one_rack_and_completes(tmp_path_factory) -> None:
    r, rec, out = run_example("training-rack", examples_tmp(tmp_path_factory))
    summary = json.loads(r.stdout)
    assert summary["totals"]["gangs_scheduled"] == 2 and summary["totals"]["gangs_pending"] == 0
    assert rec.meta.settled
    for gang in ("pretrain-0", "pretrain-1"):
        g = rec.gang(gang)
        assert len(g.pods) == 8 and len(g.nodes) == 8
        assert len(racks_of(rec, gang)) == 1, f"{gang} spans racks {racks_of(rec, gang)}"
        assert g.phase == "Succeeded"
        assert 1790 <= g.finished - g.running <= 1810  # the scripted 30 minutes
    assert racks_of(rec, "pretrain-0") != racks_of(rec, "pretrain-1")
    assert (out / "report.html").read_text().count("<svg") == 4
