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


def test_a_podcliqueset_with_zero_replicas_shows_zero() -> None:
    from .objects import object_record

    rows = {r.name: r for r in summarize(object_record()).podcliquesets}
    assert rows["idle"].replicas == 0 and rows["idle"].status == "Idle"
    assert rows["train"].replicas == 3


def test_deleted_pods_are_not_counted_after_a_scale_in() -> None:
    """A gang scaled in from 4 pods to 2: 2/2 bound and its PodCliqueSet Running, not 2/4
    and Progressing (issue 25 item 3)."""
    from phalanx.sim.record import PodRecord

    rec = synthetic_record()
    g = rec.gang("train-0")
    for p in rec.pods:
        if p.name in g.pods[2:]:
            p.deleted = 300.0
    rec.objects["PodCliqueSet"] = rec.objects["PodCliqueSet"][:1]
    rec.gangs = [x for x in rec.gangs if x.podcliqueset == "train"]
    for name in ("train-1", "train-2"):
        rec.gangs = [x for x in rec.gangs if x.name != name]
    rec.pods = [p for p in rec.pods if p.gang == "train-0" and p.clique == "worker"]
    rec.pods.append(PodRecord(name="train-0-worker-3", gang="train-0", clique="worker",
                              node="node-003", phase="Running", created=1.0, deleted=300.0))
    s = summarize(rec)
    row = next(r for r in s.gangs if r.name == "train-0")
    assert (row.pods_bound, row.pods_total) == (2, 2)
    [pcs] = s.podcliquesets
    assert (pcs.pods_running, pcs.pods_total, pcs.status) == (2, 2, "Running")


def test_a_gang_pending_after_preemption_has_no_time_to_schedule() -> None:
    """scavenger-0 was placed in 0.5s, then preempted at 119s: it waits now, so it shows no
    time to schedule and its wait counts from the preemption (issue 25 items 4 and 6)."""
    s = summarize(synthetic_record())
    row = next(g for g in s.gangs if g.name == "scavenger-0")
    assert row.wait is None
    assert s.totals.wait_p50 is not None and s.totals.wait_max == 119.0
    pending = next(p for p in s.pending if p.name == "scavenger-0")
    assert pending.waiting_for == 481.0


def test_the_headline_says_p50_p95_and_max_like_the_report() -> None:
    text = headline(synthetic_record(), summarize(synthetic_record()))
    assert "wait p50 2s, p95 1m59s, max 1m59s" in text


def test_names_repeated_across_namespaces_are_counted_apart() -> None:
    """`pretrain` in team-a and in team-b: each PodCliqueSet row counts its own gangs and
    pods, and each gang row its own pods (they were matched by name alone)."""
    from .synthetic import two_namespace_record

    s = summarize(two_namespace_record())
    pcs = {r.namespace: r for r in s.podcliquesets}
    assert (pcs["team-a"].gangs_total, pcs["team-a"].pods_running, pcs["team-a"].pods_total,
            pcs["team-a"].status) == (1, 4, 4, "Running")
    assert (pcs["team-b"].gangs_total, pcs["team-b"].pods_running, pcs["team-b"].pods_total,
            pcs["team-b"].status) == (1, 0, 4, "Pending")
    gangs = {g.namespace: g for g in s.gangs}
    assert (gangs["team-a"].pods_bound, gangs["team-b"].pods_bound) == (4, 0)
