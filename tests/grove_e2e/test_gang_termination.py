"""Grove's gang-termination e2e tests (operator/e2e/tests/gang_termination_test.go, GT1-GT6)
on the embedded cluster, with Grove's workload1-gt / workload2-gt / workload5-gt.yaml
unmodified (terminationDelay 10s).

Grove's `cordonAndKillPodsFromClique` (cordon the node of a Ready pod, then delete the pod,
so its replacement cannot be placed: the cluster has exactly one node per pod) is a
`deletePod` step with `ready: true, cordon: true`. Grove then waits terminationDelay plus a
grace period; here the next step is a minute later and the assertions read the snapshot just
before it. Recovery (`uncordonAndVerifyRecovery`) uncordons every node and expects all pods
Ready at the end of the run.
"""

from __future__ import annotations

from pathlib import Path

from .harness import (
    PCSG_REPLICA,
    PODCLIQUE,
    WORKER_LABEL,
    assert_all_running_and_ready,
    label,
    pods_of,
    run_e2e,
    running,
    uids,
)

PODS = 10
UNCORDON_ALL = {"uncordon": {"selector": f"{WORKER_LABEL}=agent"}}


def _kill(clique: str, count: int, **extra: str) -> dict:
    return {"deletePod": {"podClique": clique, "count": count, "ready": True, "cordon": True,
                          **extra}}


def _recreated(pods: list[dict], original: set[str]) -> None:
    """Grove's verifyAllPodsRecreated: no original UID survives, PODS pods exist."""
    assert not uids(pods) & original, "gang termination did not recreate every pod"
    assert len(pods) == PODS


def _not_terminated(pods: list[dict], survivors: set[str], min_running: int) -> None:
    """Grove's verifyNoGangTermination."""
    missing = survivors - uids(pods)
    assert not missing, f"{len(missing)} pods that should have survived were recreated"
    assert len(running(pods)) >= min_running, (len(running(pods)), min_running)


def _replica_pods(pods: list[dict], index: str) -> list[dict]:
    return [p for p in pods if label(p, PCSG_REPLICA) == index]


def _clique_pods(pods: list[dict], clique: str) -> list[dict]:
    return [p for p in pods if label(p, PODCLIQUE) == clique]


def _only_replica_recreated(pods: list[dict], index: str, target: set[str], other: set[str],
                            pc_a: set[str], pc_a_clique: str) -> None:
    """Grove's verifyPCSGReplicaRecreatedOnly."""
    now = _replica_pods(pods, index)
    assert len(now) == len(target) and not uids(now) & target, "the replica was not recreated"
    other_index = "1" if index == "0" else "0"
    assert other <= uids(_replica_pods(pods, other_index)), "the other replica was disturbed"
    assert pc_a <= uids(_clique_pods(pods, pc_a_clique)), "pc-a was disturbed"


def _full_replicas(tmp_path: Path, clique: str) -> None:
    steps = [{"at": "1m", **_kill(f"workload1-gt-0-{clique}", 1)},
             {"at": "2m", **UNCORDON_ALL}]
    run = run_e2e(tmp_path, "workload1-gt.yaml", nodes=PODS, steps=steps)
    before = pods_of(run.before(1), "workload1-gt")
    assert_all_running_and_ready(before, PODS)
    assert run.record.steps[0].ok, run.record.steps[0].error
    _recreated(pods_of(run.before(2), "workload1-gt"), uids(before))
    assert_all_running_and_ready(pods_of(run.final, "workload1-gt"), PODS)


def test_GT1_gang_termination_full_replicas_pcs_owned(tmp_path: Path) -> None:
    _full_replicas(tmp_path, "pc-a")


def test_GT2_gang_termination_full_replicas_pcsg_owned(tmp_path: Path) -> None:
    _full_replicas(tmp_path, "sg-x-0-pc-c")


def test_GT3_gang_termination_min_replicas_pcs_owned(tmp_path: Path) -> None:
    steps = [{"at": "1m", **_kill("workload2-gt-0-pc-a", 1)},
             {"at": "2m", **_kill("workload2-gt-0-pc-a", 1)},
             {"at": "3m", **UNCORDON_ALL}]
    run = run_e2e(tmp_path, "workload2-gt.yaml", nodes=PODS, steps=steps)
    first = pods_of(run.before(1), "workload2-gt")
    assert_all_running_and_ready(first, PODS)
    second = pods_of(run.before(2), "workload2-gt")
    killed = uids(first) - uids(second)
    assert len(killed) == 1  # the pod the step deleted (its replacement is Pending)
    _not_terminated(second, uids(first) - killed, PODS - 1)
    _recreated(pods_of(run.before(3), "workload2-gt"), uids(second))
    assert_all_running_and_ready(pods_of(run.final, "workload2-gt"), PODS)


def test_GT4_gang_termination_min_replicas_pcsg_owned(tmp_path: Path) -> None:
    sg0, sg1, pc_a = ("workload2-gt-0-sg-x-0-pc-c", "workload2-gt-0-sg-x-1-pc-c",
                      "workload2-gt-0-pc-a")
    steps = [{"at": "1m", **_kill(sg0, 1)},
             {"at": "2m", **_kill(sg0, 2)},
             {"at": "3m", **_kill(sg1, 1)},
             {"at": "4m", **_kill(sg1, 2)},
             {"at": "5m", **UNCORDON_ALL}]
    run = run_e2e(tmp_path, "workload2-gt.yaml", nodes=PODS, steps=steps)
    assert all(s.ok for s in run.record.steps), [s.error for s in run.record.steps]
    first = pods_of(run.before(1), "workload2-gt")
    assert_all_running_and_ready(first, PODS)
    step2 = pods_of(run.before(2), "workload2-gt")
    killed = uids(first) - uids(step2)
    assert len(killed) == 1
    _not_terminated(step2, uids(first) - killed, PODS - 1)
    # Step 4 of Grove's test: only scaling group replica 0 (pc-b-0 + pc-c-0) is recreated.
    step3 = pods_of(run.before(3), "workload2-gt")
    _only_replica_recreated(step3, "0", uids(_replica_pods(step2, "0")),
                            uids(_replica_pods(step2, "1")), uids(_clique_pods(step2, pc_a)),
                            pc_a)
    # Step 5: one more pod of replica 1 lost: no PodCliqueSet-level termination (pc-a kept).
    step4 = pods_of(run.before(4), "workload2-gt")
    _not_terminated(step4, uids(_clique_pods(step3, pc_a)), PODS - 5)
    # Step 6: replica 1 breached too (replica 0 still not placed): the whole replica goes.
    _recreated(pods_of(run.before(5), "workload2-gt"), uids(step4))
    assert_all_running_and_ready(pods_of(run.final, "workload2-gt"), PODS)


def test_GT5_individual_pcsg_replica_termination(tmp_path: Path) -> None:
    steps = [{"at": "1m", **_kill("workload5-gt-0-sg-x-0-pc-c", 3)},
             {"at": "2m", **UNCORDON_ALL}]
    run = run_e2e(tmp_path, "workload5-gt.yaml", nodes=PODS, steps=steps)
    first = pods_of(run.before(1), "workload5-gt")
    assert_all_running_and_ready(first, PODS)
    _only_replica_recreated(pods_of(run.before(2), "workload5-gt"), "0",
                            uids(_replica_pods(first, "0")), uids(_replica_pods(first, "1")),
                            uids(_clique_pods(first, "workload5-gt-0-pc-a")),
                            "workload5-gt-0-pc-a")
    assert_all_running_and_ready(pods_of(run.final, "workload5-gt"), PODS)


def test_GT6_scaled_podgang_pod_deletion(tmp_path: Path) -> None:
    # A Ready pc-c pod of a scaled PodGang (it carries grove.io/base-podgang).
    kill = _kill("workload2-gt-0-sg-x-1-pc-c", 1, selector="grove.io/base-podgang=workload2-gt-0")
    steps = [{"at": "1m", **kill}, {"at": "2m", **UNCORDON_ALL}]
    run = run_e2e(tmp_path, "workload2-gt.yaml", nodes=PODS, steps=steps)
    first = pods_of(run.before(1), "workload2-gt")
    assert_all_running_and_ready(first, PODS)
    assert run.record.steps[0].ok, run.record.steps[0].error
    _not_terminated(pods_of(run.before(2), "workload2-gt"),
                    uids(_clique_pods(first, "workload2-gt-0-pc-a")), PODS - 1)
    assert_all_running_and_ready(pods_of(run.final, "workload2-gt"), PODS)
