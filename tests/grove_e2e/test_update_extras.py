"""Phalanx's own update checks beyond Grove's RU/OD tests (issue 23 items 2 and 8), on the
same e2e harness and workload1.yaml: a 3-replica roll goes replica by replica in index order
with each pod recreated once, and a PodCliqueSet deleted mid-update cascades."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from phalanx.sim.record import save_record

from .harness import PCS_REPLICA, assert_all_running_and_ready, label, pods_of, run_e2e
from .updates import (
    apply,
    assert_single_pcs_replica_updated_at_a_time,
    assert_update_complete,
    currently_updating,
    deleted,
    pod_events,
    trigger_of,
    updated,
)

WL, FILE = "workload1", "workload1.yaml"
ALL = {"pc-a": "1", "pc-b": "1", "pc-c": "1"}
SCALE_3 = {"at": "30s", "scale": {"kind": "PodCliqueSet", "name": WL, "replicas": 3}}
LAST = {"at": "10m", "uncordon": {"selector": "node_role.e2e.grove.nvidia.com=agent"}}


def test_three_replicas_roll_one_at_a_time_in_index_order(tmp_path: Path) -> None:
    run = run_e2e(tmp_path, FILE, nodes=30,
                  steps=[SCALE_3, apply("1m", updated(FILE, ALL, replicas=3)), LAST])
    before = pods_of(run.before(2), WL)
    assert_all_running_and_ready(before, 30)
    final = run.before(3)
    assert_update_complete(final, WL, 3)
    now = pods_of(final, WL)
    assert_all_running_and_ready(now, 30)
    assert all(trigger_of(p) == "1" for p in now)
    events = pod_events(run, WL, since=run.t(2))
    assert_single_pcs_replica_updated_at_a_time(events)
    gone = deleted(events)
    # Each original pod deleted exactly once, nothing else deleted.
    assert sorted(e.pod["metadata"]["uid"] for e in gone) == \
        sorted(p["metadata"]["uid"] for p in before)
    # Unscheduled first, then breached, then by index: all healthy here, so 0, 1, 2.
    first_deletion = {}
    for e in gone:
        first_deletion.setdefault(label(e.pod, PCS_REPLICA), e.t)
    assert sorted(first_deletion, key=first_deletion.__getitem__) == ["0", "1", "2"]
    ended = sorted(e.t for e in run.record.events if e.reason == "ReplicaUpdated")
    assert len(ended) == 3, ended
    # Each step of the update is reported once (not again by a reconcile on a stale cache).
    told: dict[str, int] = {}
    for e in run.record.events:
        if e.kind == "PodCliqueSet":
            told[e.reason] = told.get(e.reason, 0) + e.count
    assert [told.get(r) for r in ("UpdateStarted", "ReplicaUpdateStarted", "ReplicaUpdated",
                                  "UpdateCompleted")] == [1, 3, 3, 1], told
    # `phalanx get pcs -o wide` shows the rollout (Grove's printer columns), mid-way and done.
    save_record(run.record, tmp_path / "run.json")
    mid = (ended[0] + ended[1]) / 2
    for at, updated_replicas in ((mid, "1"), (ended[2] + 5, "3")):
        r = subprocess.run([sys.executable, "-m", "phalanx.cli.main", "get", "pcs", "-o", "wide",
                            "--at", f"{at:.3f}s", "--run", "run.json"], cwd=tmp_path,
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        head, row = (line.split() for line in r.stdout.splitlines()[:2])
        assert head[:8] == ["NAME", "REPLICAS", "AVAILABLE", "UPDATED", "PCLQS-UPDATED",
                            "PCLQS-TOTAL", "PCSGS-UPDATED", "PCSGS-TOTAL"], head
        assert row[0] == WL and row[3] == updated_replicas, (at, r.stdout)
        assert row[5] == "3" and row[7] == "3", r.stdout  # one clique, one group per replica


def test_deleting_the_podcliqueset_mid_update_cascades(tmp_path: Path) -> None:
    steps = [SCALE_3, apply("1m", updated(FILE, ALL, replicas=3)),
             {"at": "65s", "delete": {"kind": "PodCliqueSet", "name": WL}}, LAST]
    run = run_e2e(tmp_path, FILE, nodes=30, steps=steps)
    assert currently_updating(run.before(3), WL) is not None  # the update was under way
    for s in run.record.steps:
        assert s.ok, (s.action, s.error)
    after = run.before(4)
    assert not pods_of(after, WL)
    for kind in ("PodCliqueSet", "PodClique", "PodCliqueScalingGroup", "PodGang"):
        left = [o["metadata"]["name"] for o in after.get(kind, [])]
        assert not left, (kind, left)


def test_gang_termination_never_fires_on_a_planned_update(tmp_path: Path) -> None:
    """workload1-gt (terminationDelay 10s): a stalled update leaves pc-a below minAvailable
    for two minutes, which outside an update would recreate the replica; during the update
    only the one selected pod is replaced. Then the update completes."""
    wl, file = "workload1-gt", "workload1-gt.yaml"
    cordon = {"cordon": {"selector": "node_role.e2e.grove.nvidia.com=agent"}}
    steps = [{"at": "50s", **cordon}, apply("1m", updated(file, {"pc-a": "1"})),
             {"at": "3m", **{"uncordon": cordon["cordon"]}}, LAST]
    run = run_e2e(tmp_path, file, nodes=10, steps=steps)
    original = pods_of(run.before(2), wl)
    assert_all_running_and_ready(original, 10)
    stalled = pods_of(run.before(3), wl)
    pca = next(o for o in run.before(3)["PodClique"] if o["metadata"]["name"].endswith("-pc-a"))
    breached = next(c for c in pca["status"]["conditions"] if c["type"] == "MinAvailableBreached")
    assert breached["status"] == "True", breached  # would trigger gang termination (10s)
    kept = {p["metadata"]["uid"] for p in original} & {p["metadata"]["uid"] for p in stalled}
    assert len(kept) == 9, len(kept)  # only the pod the update selected is gone
    assert not [e for e in run.record.events if e.reason == "GangTerminated"
                or "terminat" in e.reason.lower()], "gang termination fired"
    final = run.before(4)
    assert_update_complete(final, wl, 1)
    assert_all_running_and_ready(pods_of(final, wl), 10)


def test_the_report_shows_each_replicas_update(tmp_path: Path) -> None:
    """Issue 23 item 7: the run summary and the HTML report's gang lifecycle chart show
    each replica's update start and end (on its base gang)."""
    from phalanx.report.html import render_html
    from phalanx.report.summary import summarize

    run = run_e2e(tmp_path, FILE, nodes=30,
                  steps=[SCALE_3, apply("1m", updated(FILE, ALL, replicas=3)), LAST])
    gangs = {g.name: g for g in run.record.gangs}
    windows = [gangs[f"{WL}-{i}"].updates for i in range(3)]
    assert all(len(w) == 1 and w[0].end is not None for w in windows), windows
    # One after the other, each within the run's update, in index order.
    spans = [(w[0].start, w[0].end) for w in windows]
    assert spans[0][0] >= run.t(2) and all(a[1] <= b[0] for a, b in zip(spans, spans[1:]))
    rows = {g.name: g for g in summarize(run.record).gangs}
    assert rows[f"{WL}-1"].updates.count("-") == 1 and rows[f"{WL}-1"].updates[0] == "1"
    html = render_html(run.record)
    assert "rolling update" in html and rows[f"{WL}-2"].updates in html
