"""Grove's RollingRecreate e2e tests (operator/e2e/tests/update/rolling_recreate_test.go,
RU7-RU21) on the embedded cluster, with Grove's workload1.yaml unmodified.

A spec change is an `apply` step of workload1 with UPDATE_TRIGGER set (updates.py); Grove's
pod tracker is the run's object history. Where Grove waits for an event before its next
action (an ordinal updating, the update done), the step is placed at a virtual time by which
that has happened, and the snapshot just before the step shows it did, so a test cannot pass
on a step that landed at the wrong moment.

Not expressed, and why:
- Grove's `patchSIGTERM` set-up (RU11, RU12: containers that ignore SIGTERM, so pods take
  their terminationGracePeriodSeconds to go) is a preliminary rolling update of its own that
  only shapes how a real busybox container dies; the embedded kubelet always takes the grace
  period, so the set-up adds nothing here and is left out.
- RU13, RU14, RU15, RU17 and RU21 are commented out in Grove (flaky there); they are ported
  anyway, as their scenarios are deterministic here.
"""

from __future__ import annotations

from pathlib import Path

from phalanx.api.duration import parse_duration

from .harness import (
    WORKER_LABEL,
    Run,
    assert_all_running_and_ready,
    condition,
    name_of,
    objects,
    pods_of,
    run_e2e,
    uids,
)
from .updates import (
    HASH,
    apply,
    assert_never_replaced_twice,
    assert_one_pcsg_replica_deleted_at_a_time,
    assert_one_pod_deleted_at_a_time,
    assert_one_pod_deleted_at_a_time_per_podclique,
    assert_single_pcs_replica_updated_at_a_time,
    assert_update_complete,
    currently_updating,
    deleted,
    pod_events,
    trigger_of,
    updated,
)

WL = "workload1"
FILE = "workload1.yaml"
ALL = ("pc-a", "pc-b", "pc-c")
GROUP_CLIQUES = ("pc-b", "pc-c")  # sg-x
UNCORDON_ALL = {"uncordon": {"selector": f"{WORKER_LABEL}=agent"}}
CORDON_ALL = {"cordon": {"selector": f"{WORKER_LABEL}=agent"}}
END = {"at": "10m", **UNCORDON_ALL}  # a last step: its snapshot is the settled state


def _triggers(cliques: tuple[str, ...], value: str = "1") -> dict[str, str]:
    return {c: value for c in cliques}


def _clique_pods(pods: list[dict], clique: str) -> list[dict]:
    return [p for p in pods if f"-{clique}-" in name_of(p)]


def _all_on_new_template(pods: list[dict], cliques: tuple[str, ...], value: str = "1") -> None:
    """Grove's verifyPodHasUpdatedSpec for every pod of the changed cliques, and the
    unchanged cliques' pods without the trigger."""
    for p in pods:
        clique = next(c for c in ALL if f"-{c}-" in name_of(p))
        want = value if clique in cliques else None
        assert trigger_of(p) == want, (name_of(p), trigger_of(p), want)


def _single_update(tmp_path: Path, cliques: tuple[str, ...]) -> tuple[Run, list]:
    steps = [apply("1m", updated(FILE, _triggers(cliques))), END]
    run = run_e2e(tmp_path, FILE, nodes=10, steps=steps)
    before = pods_of(run.before(1), WL)
    assert_all_running_and_ready(before, 10)
    assert run.record.steps[0].ok, run.record.steps[0].error
    after = run.before(2)
    assert_update_complete(after, WL, 1)
    pods = pods_of(after, WL)
    assert_all_running_and_ready(pods, 10)
    _all_on_new_template(pods, cliques)
    events = pod_events(run, WL, since=run.t(1))
    # Every pod of a changed standalone clique, and every pod of a scaling group one of
    # whose cliques changed (Grove recreates a group replica whole), was replaced exactly
    # once; the others were left alone.
    group = any(c in GROUP_CLIQUES for c in cliques)
    changed = [p for p in before if any(f"-{c}-" in name_of(p) for c in cliques)
               or (group and "-sg-x-" in name_of(p))]
    assert {e.pod["metadata"]["uid"] for e in deleted(events)} == uids(changed)
    assert_never_replaced_twice(events)
    _children_report_progress(after, cliques)
    return run, events


def _children_report_progress(objs: dict, cliques: tuple[str, ...]) -> None:
    """The PodCliques' and the scaling group's `updateProgress`, per Grove's CRDs: each
    changed PodClique records the update's hashes, its pods carry its template hash, and
    the group counts its updated PodCliques."""
    gen = objs["PodCliqueSet"][0]["status"]["currentGenerationHash"]
    pods = pods_of(objs, WL)
    for pclq in objs["PodClique"]:
        st = pclq["status"]
        want = pclq["metadata"]["labels"][HASH]
        assert st["currentPodTemplateHash"] == want
        assert st["currentPodCliqueSetGenerationHash"] == gen
        assert all(p["metadata"]["labels"][HASH] == want for p in pods
                   if p["metadata"]["labels"]["grove.io/podclique"] == name_of(pclq))
        if name_of(pclq).endswith("-pc-a") and "pc-a" in cliques:
            up = st["updateProgress"]
            assert up["podTemplateHash"] == want and up["podCliqueSetGenerationHash"] == gen
            assert up["updateStartedAt"] <= up["updateEndedAt"]
            assert "readyPodsSelectedToUpdate" not in up  # cleared at the end
    group = objs["PodCliqueScalingGroup"][0]["status"]
    assert group["currentPodCliqueSetGenerationHash"] == gen
    assert group["updatedReplicas"] == 2
    if any(c in GROUP_CLIQUES for c in cliques):
        up = group["updateProgress"]
        assert up["updatedPodCliquesCount"] == up["totalPodCliquesCount"] == 4
        assert up["updateEndedAt"] and "readyReplicaIndicesSelectedToUpdate" not in up


def test_RU7_rolling_update_pcs_podclique(tmp_path: Path) -> None:
    _, events = _single_update(tmp_path, ("pc-a",))
    assert_one_pod_deleted_at_a_time(events)
    assert_single_pcs_replica_updated_at_a_time(events)


def test_RU8_rolling_update_pcsg_podclique(tmp_path: Path) -> None:
    _, events = _single_update(tmp_path, ("pc-b",))
    assert_one_pcsg_replica_deleted_at_a_time(events)
    assert_single_pcs_replica_updated_at_a_time(events)


def test_RU9_rolling_update_all_podcliques(tmp_path: Path) -> None:
    _, events = _single_update(tmp_path, ALL)
    assert_single_pcs_replica_updated_at_a_time(events)
    assert_one_pod_deleted_at_a_time_per_podclique(
        [e for e in events if "-pc-a-" in name_of(e.pod)])
    assert_one_pcsg_replica_deleted_at_a_time(events)


def test_RU10_rolling_update_insufficient_resources(tmp_path: Path) -> None:
    """Delete first: with every node cordoned, one pod is deleted and its replacement stays
    Pending; nothing more moves until the nodes are uncordoned, then the update completes."""
    steps = [{"at": "50s", **CORDON_ALL}, apply("1m", updated(FILE, _triggers(("pc-a",)))),
             {"at": "3m", **UNCORDON_ALL}, END]
    run = run_e2e(tmp_path, FILE, nodes=10, steps=steps)
    original = pods_of(run.before(2), WL)
    assert_all_running_and_ready(original, 10)
    names = {name_of(p) for p in original}
    stalled = pod_events(run, WL, since=run.t(2))
    stalled = [e for e in stalled if e.t < run.t(3)]
    gone = [e for e in deleted(stalled) if e.pod["metadata"]["uid"] in uids(original)]
    added = [e for e in stalled if e.type == "Added"]
    assert len(gone) == 1 and len(added) == 1, ([name_of(e.pod) for e in gone],
                                                [name_of(e.pod) for e in added])
    waiting = pods_of(run.before(3), WL)
    new = [p for p in waiting if p["metadata"]["uid"] not in uids(original)]
    assert len(new) == 1 and new[0]["status"].get("phase", "Pending") == "Pending", new
    assert name_of(new[0]).split("-pc-a-")[0] + "-pc-a-" in name_of(new[0])
    assert {name_of(p) for p in waiting} <= names | {name_of(new[0])}
    # Stalled visibly (issue 23 item 8): a condition and a Warning Event naming the pod.
    stalled_pcs = objects(run.before(3), "PodCliqueSet")[WL]
    cond = condition(stalled_pcs, "UpdateStalled")
    assert cond and cond["status"] == "True" and cond["reason"] == "ReplacementUnschedulable", cond
    assert f"replacement pod {name_of(new[0])} is unschedulable" in cond["message"], cond
    warned = [e for e in run.record.events if e.kind == "PodCliqueSet" and e.type == "Warning"
              and e.reason == "ReplacementUnschedulable" and e.t < run.t(3)]
    assert warned and name_of(new[0]) in warned[0].message, warned
    final = run.before(4)
    cond = condition(objects(final, "PodCliqueSet")[WL], "UpdateStalled")
    assert cond and cond["status"] == "False", cond
    assert_update_complete(final, WL, 1)
    _all_on_new_template(pods_of(final, WL), ("pc-a",))
    assert_all_running_and_ready(pods_of(final, WL), 10)


# --- scaling during an update (RU11-RU21) -----------------------------------------------

SCALE_PCS_2 = {"at": "30s", "scale": {"kind": "PodCliqueSet", "name": WL, "replicas": 2}}
UPDATE_AT = 60.0
DURING = UPDATE_AT + 0.1  # Grove: "100ms delay so update is first"
BEFORE = UPDATE_AT - 0.1  # Grove: the scale is sent, the update 100ms later


def _scale(at: float | str, kind: str, name: str, replicas: int) -> dict:
    return {"at": at, "scale": {"kind": kind, "name": name, "replicas": replicas}}


def _scale_each(at: float | str, kind: str, suffix: str, replicas: int, pcs_replicas: int = 2
                ) -> list[dict]:
    """Grove's ScalePCSGAcrossAllReplicas / scalePodClique: the object in every replica."""
    return [_scale(at, kind, f"{WL}-{i}-{suffix}", replicas) for i in range(pcs_replicas)]


def _update(replicas: int = 2) -> dict:
    return apply(UPDATE_AT, updated(FILE, _triggers(ALL), replicas=replicas))


def _run(tmp_path: Path, nodes: int, steps: list[dict]) -> Run:
    steps = sorted(steps, key=lambda s: s["at"] if isinstance(s["at"], float | int)
                   else parse_duration(s["at"]))
    run = run_e2e(tmp_path, FILE, nodes=nodes, steps=[*steps, END])
    for s in run.record.steps:
        assert s.ok, (s.action, s.error)
    return run


def _step_index(run: Run, at: float) -> int:
    """1-based index of the (first) step at virtual time `at`."""
    return next(i for i, s in enumerate(run.steps, 1) if run.t(i) == at)


def _settled(run: Run, pods: int, replicas: int) -> list[dict]:
    final = run.before(len(run.steps))
    assert_update_complete(final, WL, replicas)
    now = pods_of(final, WL)
    assert_all_running_and_ready(now, pods)
    _all_on_new_template(now, ALL)
    return now


def _no_double_update(run: Run, *, scaled_untouched: bool) -> None:
    """Grove's "should not be updated again before the rolling update ends": no pod is
    replaced twice, and (scaled out during the update) pods created with the new template are
    never replaced at all."""
    start = _step_index(run, UPDATE_AT)
    events = pod_events(run, WL, since=run.t(start))
    assert_never_replaced_twice(events)
    if scaled_untouched:
        # (With a scale-in, pods go and never come back: "in flight" would not end.)
        assert_single_pcs_replica_updated_at_a_time(events)
        before = {p["spec"].get("hostname") or name_of(p) for p in pods_of(run.before(start), WL)}
        fresh = {e.ident for e in events if e.type == "Added" and e.ident not in before}
        assert fresh, "the scale-out created no pod"
        assert not fresh & {e.ident for e in deleted(events)}, "a scaled-out pod was replaced"


def test_RU11_rolling_update_with_pcs_scale_out(tmp_path: Path) -> None:
    run = _run(tmp_path, 30, [SCALE_PCS_2, _update(2), _scale(DURING, "PodCliqueSet", WL, 3)])
    assert currently_updating(run.before(_step_index(run, DURING)), WL) is not None
    _settled(run, 30, 3)
    _no_double_update(run, scaled_untouched=True)


def test_RU12_rolling_update_with_pcs_scale_in_during_update(tmp_path: Path) -> None:
    """Scale in while the final ordinal (here replica 1: Grove updates in ascending order)
    is updating."""
    at = UPDATE_AT + 15
    run = _run(tmp_path, 30, [SCALE_PCS_2, _update(2), _scale(at, "PodCliqueSet", WL, 1)])
    assert currently_updating(run.before(_step_index(run, at)), WL) == 1
    _settled(run, 10, 1)
    _no_double_update(run, scaled_untouched=False)


def test_RU13_rolling_update_with_pcs_scale_in_after_final_ordinal(tmp_path: Path) -> None:
    run = _run(tmp_path, 20, [SCALE_PCS_2, _update(2), _scale("3m", "PodCliqueSet", WL, 1)])
    assert_update_complete(run.before(_step_index(run, 180.0)), WL, 2)
    _settled(run, 10, 1)
    _no_double_update(run, scaled_untouched=False)


def test_RU14_rolling_update_with_pcsg_scale_out_during_update(tmp_path: Path) -> None:
    run = _run(tmp_path, 28, [SCALE_PCS_2, _update(2),
                              *_scale_each(DURING, "PodCliqueScalingGroup", "sg-x", 3)])
    assert currently_updating(run.before(_step_index(run, DURING)), WL) is not None
    _settled(run, 28, 2)
    _no_double_update(run, scaled_untouched=True)


def test_RU15_rolling_update_with_pcsg_scale_out_before_update(tmp_path: Path) -> None:
    run = _run(tmp_path, 28, [SCALE_PCS_2, *_scale_each(BEFORE, "PodCliqueScalingGroup",
                                                        "sg-x", 3), _update(2)])
    _settled(run, 28, 2)
    _no_double_update(run, scaled_untouched=False)


def test_RU16_rolling_update_with_pcsg_scale_in_during_update(tmp_path: Path) -> None:
    run = _run(tmp_path, 28, [SCALE_PCS_2, *_scale_each("40s", "PodCliqueScalingGroup",
                                                        "sg-x", 3), _update(2),
                              *_scale_each(DURING, "PodCliqueScalingGroup", "sg-x", 2)])
    assert len(pods_of(run.before(_step_index(run, UPDATE_AT)), WL)) == 28
    assert currently_updating(run.before(_step_index(run, DURING)), WL) is not None
    _settled(run, 20, 2)
    _no_double_update(run, scaled_untouched=False)


def test_RU17_rolling_update_with_pcsg_scale_in_before_update(tmp_path: Path) -> None:
    run = _run(tmp_path, 28, [SCALE_PCS_2, *_scale_each("40s", "PodCliqueScalingGroup",
                                                        "sg-x", 3),
                              *_scale_each(BEFORE, "PodCliqueScalingGroup", "sg-x", 2),
                              _update(2)])
    assert len(pods_of(run.before(_step_index(run, BEFORE)), WL)) == 28
    _settled(run, 20, 2)
    _no_double_update(run, scaled_untouched=False)


def test_RU18_rolling_update_with_podclique_scale_out_during_update(tmp_path: Path) -> None:
    run = _run(tmp_path, 24, [SCALE_PCS_2, _update(2),
                              *_scale_each(DURING, "PodClique", "pc-a", 4)])
    assert currently_updating(run.before(_step_index(run, DURING)), WL) is not None
    _settled(run, 24, 2)
    _no_double_update(run, scaled_untouched=True)


def test_RU19_rolling_update_with_podclique_scale_out_before_update(tmp_path: Path) -> None:
    run = _run(tmp_path, 24, [SCALE_PCS_2, *_scale_each(BEFORE, "PodClique", "pc-a", 4),
                              _update(2)])
    _settled(run, 24, 2)
    _no_double_update(run, scaled_untouched=False)


def test_RU20_rolling_update_with_podclique_scale_in_during_update(tmp_path: Path) -> None:
    """As Grove's scenario says (its code scales pc-a to 2 only, which it already is): pc-a
    first goes to 3, then back to 2 while it updates."""
    run = _run(tmp_path, 22, [SCALE_PCS_2, *_scale_each("40s", "PodClique", "pc-a", 3),
                              _update(2), *_scale_each(DURING, "PodClique", "pc-a", 2)])
    assert len(pods_of(run.before(_step_index(run, UPDATE_AT)), WL)) == 22
    assert currently_updating(run.before(_step_index(run, DURING)), WL) is not None
    _settled(run, 20, 2)
    _no_double_update(run, scaled_untouched=False)


def test_RU21_rolling_update_with_podclique_scale_in_before_update(tmp_path: Path) -> None:
    run = _run(tmp_path, 22, [SCALE_PCS_2, *_scale_each("40s", "PodClique", "pc-a", 3),
                              *_scale_each(BEFORE, "PodClique", "pc-a", 2), _update(2)])
    assert len(pods_of(run.before(_step_index(run, BEFORE)), WL)) == 22
    _settled(run, 20, 2)
    _no_double_update(run, scaled_untouched=False)
