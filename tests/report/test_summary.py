from phalanx.report.summary import headline, mean_utilisation, summarize

from .synthetic import synthetic_record


def test_summary_counts_gangs_waits_and_pending() -> None:
    rec = synthetic_record()
    s = summarize(rec)
    assert s.totals.gangs == 5
    assert s.totals.gangs_scheduled == 3  # scavenger-0 was preempted and waits
    assert [p.name for p in s.pending] == ["scavenger-0", "big-0"]
    assert "every rack has at most 4 free nodes" in s.pending[1].explanation
    assert s.pending[0].waiting_for == 600.0 - 119.0  # since its preemption
    assert s.totals.preemptions == 1
    train2 = next(g for g in s.gangs if g.name == "train-2")
    assert train2.placement == "node-[008-011]"
    assert train2.domain == "rack=rack-2"
    assert train2.wait == 119.0
    assert s.totals.wait_max == 119.0


def test_events_keep_warnings_and_notable_reasons_only() -> None:
    s = summarize(synthetic_record())
    reasons = [e.reason for e in s.events]
    assert reasons == ["FailedScheduling", "Preempted"]  # "Scheduled" is routine noise
    assert s.events[0].count == 12


def test_mean_utilisation_is_time_weighted() -> None:
    rec = synthetic_record()
    # 32 GPUs from t=2, 64 from t=3, 96 from t=120, over 600s of 128 GPUs.
    expected = (32 * 1 + 64 * 117 + 96 * 480) / (600 * 128)
    assert abs(mean_utilisation(rec) - expected) < 1e-9
    assert "3/5 gangs scheduled; 2 pending" in headline(rec, summarize(rec))
