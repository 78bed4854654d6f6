"""The kubediff report built from case results (no server)."""

import json

from phalanx.bench.kubediff import features as F
from phalanx.bench.kubediff.compare import Outcome, compare
from phalanx.bench.kubediff.generate import generate_case
from phalanx.bench.kubediff.report import build_report, summary_lines, write_report
from phalanx.bench.kubediff.run import CaseRun

NO3 = "0/3 nodes are available: 3 Insufficient cpu."
NO3_TAINT = "0/3 nodes are available: 3 node(s) had untolerated taint(s)."
NO3_CLAIM = ('0/3 nodes are available: persistentvolumeclaim "c0" not found. preemption: '
             "0/3 nodes are available: 3 Preemption is not helpful for scheduling.")


def _run(seed, kube, phalanx, node_check="", error=""):
    run = CaseRun(generate_case(seed, F.BASE_FEATURES), phalanx=phalanx, kube=kube,
                  node_check=node_check, error=error)
    if not error:
        run.differences = compare(kube, phalanx, node_check)
    return run


def test_counts_by_outcome_feature_and_difference_and_records_every_disagreement(tmp_path):
    runs = [
        _run(1, Outcome("k", True, pinned_to="n1"), Outcome("p", True, node="n1"), "feasible"),
        _run(2, Outcome("k", False, message=NO3), Outcome("p", False, message=NO3)),
        _run(3, Outcome("k", False, message=NO3_TAINT), Outcome("p", False, message=NO3)),
        _run(4, Outcome("k", False, message=NO3), Outcome("p", True, node="n2")),
        _run(5, None, None, error="TimeoutError: x"),
        _run(6, Outcome("k", False, message=NO3_CLAIM), Outcome("p", False, message=NO3_CLAIM)),
    ]
    report = build_report(runs, seed=1, features=F.BASE_FEATURES, seconds=3.0)
    assert report["summary"] == {"agree": 3, "disagree": 2, "errors": 1, "agreement": 0.5}
    assert report["outcomes"] == {"both_scheduled": 1, "both_unschedulable": 3, "error": 1,
                                  "only_phalanx_scheduled": 1}
    assert report["node_check"] == {"feasible": 1, "not_applicable": 5}
    assert report["differences"] == {"reasons": {"cases": 1, "blocking": True},
                                     "schedulability": {"cases": 1, "blocking": True}}
    assert [d["seed"] for d in report["disagreements"]] == [3, 4, 5]
    assert report["disagreements"][0]["case"]["seed"] == 3  # the whole case, to reproduce
    assert report["kube_reasons_seen"] == {"Insufficient cpu": 2,
                                           "node(s) had untolerated taint(s)": 1}
    assert report["kube_prefilter_seen"] == {'persistentvolumeclaim "..." not found': 1}
    for f, counts in report["by_feature"].items():
        using = [r for r in runs if f in r.case.uses]
        assert counts == {"cases": len(using), "agree": sum(r.agrees for r in using),
                          "disagree": sum(not r.agrees for r in using)}
    assert "--cases 6 --seed 1 --features resources,taints" in report["command"]
    path = write_report(report, tmp_path / "out" / "kubediff-6.json")
    assert json.loads(path.read_text())["cases"] == 6
    text = "\n".join(summary_lines(report))
    assert "6 cases: 3 agree, 2 disagree, 1 errors" in text and "seeds: 3, 4, 5" in text
