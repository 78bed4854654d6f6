"""`phalanx diff RUN_A RUN_B` (issue 25 item 13): totals side by side, then each PodGang
whose outcome differs."""

from phalanx.report.diff import diff_dict, diff_records, render_diff

from .synthetic import synthetic_record


def test_same_runs_differ_in_nothing() -> None:
    d = diff_records(synthetic_record(), synthetic_record())
    assert d.gangs == [] and d.same_gangs == 5
    assert all(a == b for _, a, b in d.totals)


def test_a_gang_placed_elsewhere_and_one_only_in_b() -> None:
    a, b = synthetic_record(), synthetic_record()
    g = b.gang("train-2")
    g.nodes, g.domain, g.scheduled = ["node-012", "node-013"], "rack=rack-3", 10.0
    b.gangs = [x for x in b.gangs if x.name != "big-0"]
    d = diff_records(a, b)
    assert ("train-2", "domain", "rack=rack-2", "rack=rack-3") in d.gangs
    assert ("train-2", "time to schedule", "1m59s", "9s") in d.gangs
    assert ("big-0", "only in A", "Pending", "-") in d.gangs
    totals = {m: (x, y) for m, x, y in d.totals}
    assert totals["gangs pending"] == ("2", "1") and totals["wait max"] == ("1m59s", "9s")
    text = render_diff(d, "a.json", "b.json")
    assert text.startswith("A: a.json\nB: b.json\n")
    assert any(line.split() == ["gangs", "pending", "2", "1", "changed"]
               for line in text.splitlines())
    assert "3 PodGang(s) with the same outcome in both runs; 2 differ." in text
    assert diff_dict(d)["gangs"][0]["podgang"] == "big-0"
